// LSTM as torch.nn.LSTM with batch_first=True: multi-layer, optionally a bidirectional first layer
// (GNMT's encoder), returning the output sequence and the final hidden and cell states.
// Gates in PyTorch's order (i, f, g, o); parameters named as PyTorch names them
// (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, then *_l0_reverse, then *_l1, ...), all
// initialised U(-1/sqrt(hidden), 1/sqrt(hidden)), so a state_dict maps one to one.
//
// Layout: sequences are batch-first [N, T, features] so that a micro-batch is a slice along dim 0;
// initial and final states are [N, S, H] with S = num_layers (+1 for the reverse direction of a
// bidirectional first layer), slot order as PyTorch's h_n (l0, l0_reverse, l1, ...), i.e.
// PyTorch's [S, N, H] transposed to put the batch first.
//
// Algorithm (CPU and CUDA alike): per layer and direction one GEMM computes the input projection
// of the whole sequence, then each time step adds one recurrent GEMM (h_{t-1} W_hh^T) into the
// saved gate pre-activations and a fused kernel applies the gate non-linearities and the cell
// update in place. Backward walks the steps in reverse with one GEMM per step for dh_{t-1};
// backward_input stops there and keeps the gate gradients, backward_weight turns them into
// W_ih, W_hh and bias gradients with three large GEMMs.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

struct LstmOptions {
  std::int64_t input_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 1;
  bool bidirectional_first = false;  // layer 0 runs both directions; layer 1 then reads 2 * hidden
};

class LSTM : public SplitBackwardLayer {
 public:
  explicit LSTM(const LstmOptions& options);

  std::string type() const override { return "LSTM"; }
  // [x: N, T, input] or [x, h0: N, S, H, c0: N, S, H] -> [y: N, T, output_size(), h_n: N, S, H, c_n: N, S, H]
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  // grad_outputs: [dy] or [dy, dh_n, dc_n]; any may be undefined (no gradient). Returns [dx] or
  // [dx, dh0, dc0], matching the forward's inputs.
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<Parameter*> local_parameters() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  const LstmOptions& options() const { return options_; }
  std::int64_t state_slots() const;  // S
  std::int64_t output_size() const;  // features of y: 2H for a single bidirectional layer, else H

 private:
  // One layer's one direction: its weights and where its state lives.
  struct Direction {
    std::int64_t layer = 0;
    bool reverse = false;
    std::int64_t slot = 0;        // index into the S state slots
    std::int64_t input_size = 0;  // features this layer reads
    Parameter weight_ih, weight_hh, bias_ih, bias_hh;
    std::string key;  // context key prefix, "l0.r"
  };

  std::int64_t directions_of(std::int64_t layer) const;
  void run_direction(const Direction& dir, const Tensor& input, const Tensor& h0, const Tensor& c0, Context& ctx);
  void backprop_direction(const Direction& dir, Context& ctx, const Tensor& grad_output, std::int64_t output_column,
                          std::int64_t output_pitch, const Tensor& grad_h_n, const Tensor& grad_c_n,
                          Tensor& grad_input, bool accumulate_input, Tensor& grad_h0, Tensor& grad_c0);

  LstmOptions options_;
  std::vector<Direction> directions_;  // layer-major, forward before reverse
};

}  // namespace loom
