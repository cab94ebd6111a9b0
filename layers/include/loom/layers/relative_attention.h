// XLNet's two-stream multi-head attention with Transformer-XL relative positions (Yang et al. 2019,
// Dai et al. 2019), without the segment recurrence (no memory: keys are the T positions of the
// sequence itself).
//   inputs  {h [B, T, E] content stream, g [B, T, E] query stream, ranks [B, T]}
//   outputs {a_h, a_g} [B, T, E]: the attention outputs after the projection "o" (the residual and
//           LayerNorm belong to the block).
// ranks[b, j] is position j's place in sample b's factorisation order (floating, any values that
// order the positions). The content stream of i sees keys j with ranks[j] <= ranks[i] (itself
// included); the query stream sees ranks[j] < ranks[i] only (it must not see its own token). A
// query that sees no key (the first of the order, query stream) gets zero attention.
// For each stream, with q = x Wq, keys and values from the content stream k = h Wk, v = h Wv, and
// the relative encodings kr = R Wr (R [2T-1, E] the fixed sinusoids of the distances i - j from
// T-1 down to -(T-1), sin half then cos half as Transformer-XL), per head:
//   score[i, j] = ((q_i + u) . k_j + (q_i + w) . kr[T-1-i+j]) / sqrt(D)
// which is Transformer-XL's relative shift written as the exact gather. u ("content_bias") and w
// ("position_bias") are [H, D]. Projections q, k, v, o, r are Linear(E, E) without bias (XLNet has
// none); every weight starts N(0, 0.02) as XLNet's initializer. q and o are shared by the two
// streams. Attention-probability dropout per stream, with partition-independent masks as Dropout.
// Backward splits: backward_input returns {dh, dg, zeros (ranks)}; every parameter gradient,
// the biases' included, waits for backward_weight. CPU only: a CUDA tensor is a loom::Error.
#pragma once

#include <loom/layers/linear.h>

namespace loom {

class TwoStreamRelativeAttention : public SplitBackwardLayer {
 public:
  TwoStreamRelativeAttention(std::int64_t embed_dim, std::int64_t num_heads, double dropout = 0.0);

  std::int64_t embed_dim() const { return embed_dim_; }
  std::int64_t num_heads() const { return num_heads_; }
  Parameter& content_bias() { return content_bias_; }
  Parameter& position_bias() { return position_bias_; }

  std::string type() const override { return "TwoStreamRelativeAttention"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<Parameter*> local_parameters() override { return {&content_bias_, &position_bias_}; }
  std::vector<std::pair<std::string, Layer*>> children() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  struct Shared;  // what both streams use in backward (relative_attention.cpp)
  // One stream's scores, softmax, dropout and values; returns the merged heads [B, T, E].
  Tensor attend(const Tensor& q, const Shared& shared, const Tensor& ranks, bool content, Context& ctx,
                const std::string& stream);
  // The same stream backward: accumulates dk, dv, dkr and the bias sums, returns dq [B*H, T, D].
  Tensor attend_backward(const Tensor& d_merged, Shared& shared, Context& ctx, const std::string& stream);
  std::uint64_t dropout_key(const std::string& stream, const Context& ctx) const;

  std::int64_t embed_dim_, num_heads_, head_dim_;
  double dropout_;
  Linear q_, k_, v_, o_, r_;
  Parameter content_bias_, position_bias_;
};

// R [2T-1, E]: row p is the sinusoid of the relative distance T-1-p (sin(d f_k) for k < E/2, then
// cos(d f_k)), f_k = 10000^(-2k/E); in `dtype` on the CPU.
Tensor relative_sinusoids(std::int64_t length, std::int64_t embed_dim, DType dtype);

}  // namespace loom
