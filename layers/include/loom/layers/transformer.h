// Transformer blocks, PyTorch's nn.TransformerEncoderLayer / nn.TransformerDecoderLayer
// (batch_first) with the same sub-layer names, post-LN (norm_first = false) or pre-LN:
//   encoder  post: h = norm1(x + drop1(attn(x)));       y = norm2(h + drop2(ff(h)))
//            pre:  h = x + drop1(attn(norm1(x)));       y = h + drop2(ff(norm2(h)))
//   decoder  adds a cross-attention step on `memory` between self-attention and the feed-forward
//            (norm2/dropout2 for it, norm3/dropout3 for the feed-forward); self-attention is causal.
//   ff(x) = linear2(dropout(activation(linear1(x))))
// Encoder inputs {x} or {x, key_padding_mask}; decoder inputs {tgt, memory} and outputs
// {y, memory}, so a chain of decoder blocks carries the memory (and accumulates its gradient).
// Backward splits: backward_input leaves the attention and feed-forward weight gradients to
// backward_weight.
#pragma once

#include <loom/layers/activation.h>
#include <loom/layers/attention.h>
#include <loom/layers/dropout.h>
#include <loom/layers/layer_norm.h>
#include <loom/layers/linear.h>

namespace loom {

struct TransformerOptions {
  std::int64_t d_model = 512;
  std::int64_t heads = 8;
  std::int64_t d_ff = 2048;
  double dropout = 0.1;
  ActivationKind activation = ActivationKind::relu;  // PyTorch's default; GELU for BERT/GPT
  bool norm_first = false;                           // pre-LN when true
  bool causal = false;                               // encoder self-attention mask (GPT blocks)
  double layer_norm_eps = 1e-5;
};

// The feed-forward sub-layer shared by both blocks (not a Layer: its parts are the block's children).
struct FeedForward {
  FeedForward(const TransformerOptions& options);
  Tensor forward(const Tensor& x, Context& ctx);          // uses ctx.child(0..3)
  Tensor backward_input(const Tensor& grad, Context& ctx);
  void backward_weight(Context& ctx);
  double flops(const Shape& x) const;
  std::size_t activation_bytes(const Shape& x) const;
  Linear linear1;
  Activation activation;
  Dropout dropout;
  Linear linear2;
};

class TransformerEncoderLayer : public SplitBackwardLayer {
 public:
  explicit TransformerEncoderLayer(const TransformerOptions& options);

  std::string type() const override { return "TransformerEncoderLayer"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  TransformerOptions options_;
  MultiHeadAttention self_attn_;
  FeedForward ff_;
  LayerNorm norm1_, norm2_;
  Dropout dropout1_, dropout2_;
};

class TransformerDecoderLayer : public SplitBackwardLayer {
 public:
  explicit TransformerDecoderLayer(const TransformerOptions& options);

  std::string type() const override { return "TransformerDecoderLayer"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  TransformerOptions options_;
  MultiHeadAttention self_attn_, cross_attn_;
  FeedForward ff_;
  LayerNorm norm1_, norm2_, norm3_;
  Dropout dropout1_, dropout2_, dropout3_;
};

}  // namespace loom
