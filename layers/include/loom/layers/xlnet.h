// XLNet blocks (Yang et al. 2019): permutation language modelling with two-stream relative
// attention, one block per layer so that a pipeline can cut between any two. Every block boundary
// carries [h, g, ranks]:
//   h      [B, T, E] content stream (sees its own token)
//   g      [B, T, E] query stream (knows its position, not its token: what predicts the token)
//   ranks  [B, T]    each position's place in the sample's factorisation order, in the streams'
//                    floating dtype. The layers pass it through, so its gradient is the one that
//                    arrived for it (the masks add none); the head returns zeros for it and for h
//                    (a stage boundary sends defined tensors).
//
//   XLNetEmbedding  tokens [B, T] (i64) -> [dropout(word[tokens]), dropout(mask_emb broadcast), ranks]
//                   The factorisation order of global sample s = ctx.first_sample + row is drawn
//                   from (ctx.seed, ctx.step, s) alone (factorisation_ranks), so it is the same on
//                   every rank and in every partition, and a new one each step.
//   XLNetLayer      post-LN as XLNet, with the attention, its LayerNorm and the feed-forward
//                   shared by the two streams (x = h or g, a = the stream's attention output):
//                   x1 = norm1(x + drop(a));  x2 = norm2(x1 + drop(linear2(drop(gelu(linear1(x1))))))
//   XLNetHead       logits [B, T, V] = Linear(E, V)(dropout(g)): the LM head on the query stream.
//                   XLNet ties it to the word embedding; across pipeline stages it cannot be, so it
//                   is untied (its own weight and bias).
// No segment recurrence (Transformer-XL memory), no segment embeddings or segment bias, no
// partial prediction (every position is a target). Dropout masks differ per stream. CPU only.
#pragma once

#include <loom/layers/activation.h>
#include <loom/layers/dropout.h>
#include <loom/layers/embedding.h>
#include <loom/layers/layer_norm.h>
#include <loom/layers/linear.h>
#include <loom/layers/relative_attention.h>

namespace loom {

struct XLNetOptions {
  std::int64_t vocab = 32000;
  std::int64_t d_model = 1024;
  std::int64_t heads = 16;
  std::int64_t d_ff = 4096;
  double dropout = 0.1;
  double layer_norm_eps = 1e-12;  // XLNet's
};

// ranks[j] = place of position j in a uniformly random order of [0, length), from (seed, step,
// sample) only.
std::vector<std::int64_t> factorisation_ranks(std::uint64_t seed, std::uint64_t step, std::int64_t sample,
                                              std::int64_t length);

class XLNetEmbedding : public SplitBackwardLayer {
 public:
  explicit XLNetEmbedding(const XLNetOptions& options);

  Parameter& mask_embedding() { return mask_embedding_; }
  std::string type() const override { return "XLNetEmbedding"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  // Accumulates the word and mask embedding gradients (as Embedding does); returns {undefined}.
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Parameter*> local_parameters() override { return {&mask_embedding_}; }
  std::vector<std::pair<std::string, Layer*>> children() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  Embedding word_;
  Parameter mask_embedding_;  // [E]
  Dropout dropout_h_, dropout_g_;
};

class XLNetLayer : public SplitBackwardLayer {
 public:
  explicit XLNetLayer(const XLNetOptions& options);

  std::string type() const override { return "XLNetLayer"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  // One stream's residual steps after the attention; `stream` 0 (h) or 1 (g) picks the contexts
  // and the dropout layers.
  Tensor stream_forward(const Tensor& x, const Tensor& attended, Context& ctx, std::size_t stream);
  // Returns {d x through the residuals, d attended}.
  std::pair<Tensor, Tensor> stream_backward(const Tensor& dy, Context& ctx, std::size_t stream);

  TwoStreamRelativeAttention rel_attn_;
  LayerNorm norm1_, norm2_;
  Linear linear1_, linear2_;
  Activation activation_;
  Dropout attn_dropout_[2], ff_dropout_[2], out_dropout_[2];
};

class XLNetHead : public SplitBackwardLayer {
 public:
  explicit XLNetHead(const XLNetOptions& options);

  std::string type() const override { return "XLNetHead"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  // {zeros (h), dg, zeros (ranks)}.
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  Dropout dropout_;
  Linear output_;
};

}  // namespace loom
