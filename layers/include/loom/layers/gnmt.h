// GNMT blocks: the recurrent layers of GNMT v2 (Wu et al. 2016, as in the MLPerf / NVIDIA
// reference that PipeDream and DAPPLE train), one block per LSTM layer so that a pipeline can cut
// between any two. Embeddings and the classifier are ordinary Embedding / Linear blocks.
//
// Tensors travel as a list; every block reads the first entries it needs and passes the rest
// through unchanged (with their gradients), so a stage boundary can carry the encoder output,
// the decoder input and the attention context together:
//
//   encoder   [x, rest...]                              -> [y, rest...]
//             y = LSTM(x) (+ x when residual). Layer 0 is bidirectional (2H out), layer 1 reads 2H,
//             layers >= 2 are residual in the reference.
//   decoder 0 [encoder_out, decoder_in, (mask), rest...] -> [h, context, rest...]
//             h = LSTM(decoder_in), context = BahdanauAttention(h, encoder_out, mask)
//   decoder i [x, context, rest...]                     -> [y, context, rest...]
//             y = LSTM(concat(x, context)) (+ x when residual; layers >= 2 in the reference)
//
// The recurrent states start at zero (teacher forcing, as the reference trains). Dropout between
// layers is left to separate Dropout blocks. The split backward splits the LSTM and attention
// weight gradients off into backward_weight.
#pragma once

#include <loom/layers/bahdanau_attention.h>
#include <loom/layers/lstm.h>

namespace loom {

// What the three GNMT blocks share: one LSTM (child "rnn", context child 0), whose weight
// gradients are the block's backward_weight.
class GnmtRecurrentLayer : public SplitBackwardLayer {
 public:
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override { return {{"rnn", &rnn_}}; }
  LSTM& rnn() { return rnn_; }

 protected:
  explicit GnmtRecurrentLayer(const LstmOptions& rnn) : rnn_(rnn) {}
  LSTM rnn_;
};

struct GnmtEncoderLayerOptions {
  std::int64_t input_size = 0;
  std::int64_t hidden_size = 0;
  bool bidirectional = false;  // output 2 * hidden_size
  bool residual = false;       // needs input_size == hidden_size
};

class GnmtEncoderLayer : public GnmtRecurrentLayer {
 public:
  explicit GnmtEncoderLayer(const GnmtEncoderLayerOptions& options);
  std::string type() const override { return "GNMTEncoderLayer"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  GnmtEncoderLayerOptions options_;
};

struct GnmtAttentionLayerOptions {
  std::int64_t input_size = 0;   // decoder input features (the target embedding)
  std::int64_t hidden_size = 0;  // LSTM hidden size = encoder output size = attention units
  bool key_padding_mask = false;  // a [N, T_source] mask follows decoder_in in the inputs
};

class GnmtAttentionLayer : public GnmtRecurrentLayer {
 public:
  explicit GnmtAttentionLayer(const GnmtAttentionLayerOptions& options);
  std::string type() const override { return "GNMTAttentionLayer"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override { return {{"rnn", &rnn_}, {"attn", &attention_}}; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;
  BahdanauAttention& attention() { return attention_; }

 private:
  std::size_t consumed() const { return options_.key_padding_mask ? 3 : 2; }
  GnmtAttentionLayerOptions options_;
  BahdanauAttention attention_;
};

struct GnmtDecoderLayerOptions {
  std::int64_t hidden_size = 0;  // x and context are both [N, T, hidden_size]
  bool residual = false;
};

class GnmtDecoderLayer : public GnmtRecurrentLayer {
 public:
  explicit GnmtDecoderLayer(const GnmtDecoderLayerOptions& options);
  std::string type() const override { return "GNMTDecoderLayer"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  GnmtDecoderLayerOptions options_;
};

}  // namespace loom
