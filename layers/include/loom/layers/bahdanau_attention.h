// Additive (Bahdanau) attention with weight normalisation, as GNMT v2 uses it (the MLPerf /
// NVIDIA GNMT reference, the model PipeDream and DAPPLE train):
//   pq = q Wq^T, pk = k Wk^T                       (linear_q, linear_k: no bias)
//   v^ = g * v / |v|                               (linear_att v, normalize_scalar g)
//   score[n, i, j] = v^ . tanh(pq[n, i] + pk[n, j] + b)     (normalize_bias b)
//   p = softmax_j(score), padded keys excluded;  context[n, i] = sum_j p[n, i, j] k[n, j]
// The context is a mix of the raw keys (the encoder outputs), as in the reference.
// Inputs {query [N, Tq, Q], keys [N, Tk, K]} or {query, keys, key_padding_mask [N, Tk]} (non-zero =
// padded, any dtype); output {context [N, Tq, K]}. A query whose keys are all padded gets a zero
// context. Initialisation as the reference: linear_q/k PyTorch's Linear default, v U(-0.1, 0.1),
// g = 1/sqrt(units), b = 0.
// The score kernel recomputes tanh in backward instead of keeping the [N, Tq, Tk, units] tensor.
// backward_input defers all parameter gradients (projections, v, g, b) to backward_weight.
#pragma once

#include <memory>

#include <loom/layers/linear.h>

namespace loom {

struct BahdanauAttentionOptions {
  std::int64_t query_size = 0;
  std::int64_t key_size = 0;
  std::int64_t units = 0;
};

class BahdanauAttention : public SplitBackwardLayer {
 public:
  explicit BahdanauAttention(const BahdanauAttentionOptions& options);

  std::string type() const override { return "BahdanauAttention"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<Parameter*> local_parameters() override;
  std::vector<std::pair<std::string, Layer*>> children() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  const BahdanauAttentionOptions& options() const { return options_; }
  Linear& linear_q() { return linear_q_; }
  Linear& linear_k() { return linear_k_; }
  Parameter& linear_att() { return linear_att_; }
  Parameter& normalize_scalar() { return normalize_scalar_; }
  Parameter& normalize_bias() { return normalize_bias_; }

 private:
  Tensor normalized_v() const;

  BahdanauAttentionOptions options_;
  Linear linear_q_, linear_k_;
  Parameter linear_att_, normalize_scalar_, normalize_bias_;
};

}  // namespace loom
