// Multi-head scaled dot-product attention with output projection, PyTorch's nn.MultiheadAttention
// (batch_first) re-expressed with separate projections:
//   self-attention   inputs {x [B, T, E]} or {x, key_padding_mask [B, T]}
//                    projections "qkv" Linear(E, 3E) and "out" Linear(E, E)
//   cross-attention  inputs {x [B, T, E], memory [B, S, E]} or {x, memory, key_padding_mask [B, S]}
//                    projections "q" Linear(E, E), "kv" Linear(E, 2E), "out" Linear(E, E)
// key_padding_mask: non-zero marks a padded key that no query attends to (PyTorch's True).
// causal: query i attends to keys j <= i. A query whose keys are all masked gets zero attention
// (PyTorch gives NaN there). Gradients: {dx} / {dx, dmemory}, undefined for the mask.
// Initialisation as PyTorch: the packed in-projection xavier-uniform over [3E, E] with zero bias,
// the output projection U(+-1/sqrt(E)) with zero bias. Attention-probability dropout uses the same
// partition-independent masks as Dropout. Backward splits into input and weight parts (the
// projections' weight gradients wait for backward_weight).
#pragma once

#include <loom/layers/linear.h>

namespace loom {

class MultiHeadAttention : public SplitBackwardLayer {
 public:
  MultiHeadAttention(std::int64_t embed_dim, std::int64_t num_heads, bool cross = false, bool causal = false,
                     double dropout = 0.0, bool bias = true);

  std::int64_t embed_dim() const { return embed_dim_; }
  std::int64_t num_heads() const { return num_heads_; }
  bool is_cross() const { return cross_; }
  bool is_causal() const { return causal_; }
  Linear& in_projection() { return *in_; }   // qkv (self) or q (cross)
  Linear* kv_projection() { return kv_.get(); }  // cross only
  Linear& out_projection() { return *out_; }

  std::string type() const override { return cross_ ? "CrossAttention" : "SelfAttention"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  std::int64_t embed_dim_, num_heads_, head_dim_;
  bool cross_, causal_;
  double dropout_;
  std::unique_ptr<Linear> in_, kv_, out_;
};

}  // namespace loom
