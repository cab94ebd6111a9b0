// XLNet blocks (see xlnet.h): the embedding with the factorisation orders, the two-stream layer
// (each stream's residual steps written out as in transformer.cpp's post-LN path) and the LM head.
#include <loom/layers/xlnet.h>

#include <algorithm>
#include <numeric>

#include <loom/core/ops.h>
#include <loom/core/rng.h>

#include "../layer_util.h"

namespace loom {

namespace {

Init xlnet_init() { return Init::normal(0.0, 0.02); }

Tensor sum(const Tensor& a, const Tensor& b) {
  Tensor out = detail::empty_like(a);
  ops::add(a, b, out);
  return out;
}

void check_cpu(const Layer& layer, const TensorList& tensors) {
  for (const Tensor& x : tensors)
    LOOM_CHECK(!x.defined() || !x.device().is_cuda(), layer.describe(), " has no CUDA path yet (an input is on ",
               x.device().str(), ")");
}

// {h, g, ranks} with h and g [B, T, E] and ranks [B, T].
void check_streams(const Layer& layer, const TensorList& inputs, std::int64_t embed_dim) {
  detail::check_inputs(layer, inputs, 3);
  check_cpu(layer, inputs);
  const Tensor &h = inputs[0], &g = inputs[1], &ranks = inputs[2];
  LOOM_CHECK(h.rank() == 3 && h.size(2) == embed_dim && g.shape() == h.shape() &&
                 ranks.shape() == (Shape{h.size(0), h.size(1)}),
             layer.describe(), ": expected {h, g [batch, length, ", embed_dim, "], ranks [batch, length]}, got ",
             h.shape().str(), ", ", g.shape().str(), ", ", ranks.shape().str());
}

Tensor defined_or_zeros(const Tensor& grad, const Shape& shape, DType dtype) {
  return grad.defined() ? grad : Tensor::zeros(shape, dtype);
}

}  // namespace

std::vector<std::int64_t> factorisation_ranks(std::uint64_t seed, std::uint64_t step, std::int64_t sample,
                                              std::int64_t length) {
  LOOM_CHECK(sample >= 0 && length >= 1, "factorisation_ranks: sample ", sample, " and length ", length);
  Tensor keys = Tensor::empty(Shape{length}, DType::f64);
  rng::uniform(keys, seed, rng::stream_key("xlnet.factorisation_order", step), 0.0, 1.0,
               static_cast<std::uint64_t>(sample * length));
  const std::vector<double> values = keys.to_double_vector();
  std::vector<std::int64_t> order(static_cast<std::size_t>(length));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return values[static_cast<std::size_t>(a)] < values[static_cast<std::size_t>(b)];
  });
  std::vector<std::int64_t> ranks(order.size());
  for (std::size_t place = 0; place < order.size(); ++place)
    ranks[static_cast<std::size_t>(order[place])] = static_cast<std::int64_t>(place);
  return ranks;
}

// ---- embedding ---------------------------------------------------------------------------------

XLNetEmbedding::XLNetEmbedding(const XLNetOptions& o)
    : word_(o.vocab, o.d_model), dropout_h_(o.dropout), dropout_g_(o.dropout) {
  word_.weight().init = xlnet_init();
  mask_embedding_ = make_parameter("mask_embedding", Shape{o.d_model}, xlnet_init());
}

std::vector<std::pair<std::string, Layer*>> XLNetEmbedding::children() {
  return {{"word", &word_}, {"dropout_h", &dropout_h_}, {"dropout_g", &dropout_g_}};
}

TensorList XLNetEmbedding::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 1);
  check_cpu(*this, inputs);
  const Tensor& tokens = inputs[0];
  LOOM_CHECK(tokens.rank() == 2, describe(), ": expected tokens [batch, length], got ", tokens.shape().str());
  const std::int64_t B = tokens.size(0), L = tokens.size(1);
  const DType dtype = mask_embedding_.value.dtype();
  const Tensor h = dropout_h_.forward_tensor(word_.forward_tensor(tokens, ctx.child(0)), ctx.child(1));
  Tensor g = Tensor::zeros(Shape{B, L, mask_embedding_.value.size(0)}, dtype);
  ops::bias_add(g, mask_embedding_.value);
  g = dropout_g_.forward_tensor(g, ctx.child(2));
  std::vector<double> ranks;
  ranks.reserve(static_cast<std::size_t>(B * L));
  for (std::int64_t row = 0; row < B; ++row)
    for (std::int64_t rank : factorisation_ranks(ctx.seed, ctx.step, ctx.first_sample + row, L))
      ranks.push_back(static_cast<double>(rank));
  Tensor rank_tensor = Tensor::empty(Shape{B, L}, dtype);
  ops::cast(Tensor::from_vector(ranks, Shape{B, L}), rank_tensor);
  return {h, g, rank_tensor};
}

TensorList XLNetEmbedding::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(grad_outputs.size() == 3, describe(), ": expected gradients of {h, g, ranks}, got ",
             grad_outputs.size());
  if (grad_outputs[0].defined())
    word_.backward_input_tensor(dropout_h_.backward_input_tensor(grad_outputs[0], ctx.child(1)), ctx.child(0));
  if (grad_outputs[1].defined())
    ops::bias_grad(dropout_g_.backward_input_tensor(grad_outputs[1], ctx.child(2)), mask_embedding_.grad);
  ctx.clear();
  return {Tensor()};  // token ids get no gradient
}

std::vector<Shape> XLNetEmbedding::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1 && input_shapes[0].rank() == 2, describe(), ": expects tokens [batch, length]");
  const Shape& tokens = input_shapes[0];
  const Shape stream{tokens[0], tokens[1], word_.dim()};
  return {stream, stream, tokens};
}

double XLNetEmbedding::flops(const std::vector<Shape>& input_shapes) const {
  return 3.0 * static_cast<double>(output_shapes(input_shapes).at(0).numel());
}

std::size_t XLNetEmbedding::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return word_.activation_bytes(input_shapes);
}

// ---- layer -------------------------------------------------------------------------------------

namespace {
// Child context slots: the attention, then per stream s the steps at kStream + s * kStepsPerStream.
enum Step : std::size_t { kAttnDrop, kNorm1, kLinear1, kActivation, kFfDrop, kLinear2, kOutDrop, kNorm2, kSteps };
constexpr std::size_t kAttn = 0, kStream = 1;
}  // namespace

XLNetLayer::XLNetLayer(const XLNetOptions& o)
    : rel_attn_(o.d_model, o.heads, o.dropout),
      norm1_(o.d_model, o.layer_norm_eps),
      norm2_(o.d_model, o.layer_norm_eps),
      linear1_(o.d_model, o.d_ff),
      linear2_(o.d_ff, o.d_model),
      activation_(ActivationKind::gelu),
      attn_dropout_{Dropout(o.dropout), Dropout(o.dropout)},
      ff_dropout_{Dropout(o.dropout), Dropout(o.dropout)},
      out_dropout_{Dropout(o.dropout), Dropout(o.dropout)} {
  linear1_.set_init(xlnet_init(), Init::zeros());
  linear2_.set_init(xlnet_init(), Init::zeros());
}

std::vector<std::pair<std::string, Layer*>> XLNetLayer::children() {
  return {{"rel_attn", &rel_attn_},          {"norm1", &norm1_},
          {"linear1", &linear1_},            {"activation", &activation_},
          {"linear2", &linear2_},            {"norm2", &norm2_},
          {"attn_dropout_h", &attn_dropout_[0]}, {"attn_dropout_g", &attn_dropout_[1]},
          {"ff_dropout_h", &ff_dropout_[0]}, {"ff_dropout_g", &ff_dropout_[1]},
          {"out_dropout_h", &out_dropout_[0]}, {"out_dropout_g", &out_dropout_[1]}};
}

Tensor XLNetLayer::stream_forward(const Tensor& x, const Tensor& attended, Context& ctx, std::size_t stream) {
  const auto at = [&](Step step) -> Context& { return ctx.child(kStream + stream * kSteps + step); };
  const Tensor x1 = norm1_.forward_tensor(sum(x, attn_dropout_[stream].forward_tensor(attended, at(kAttnDrop))),
                                          at(kNorm1));
  Tensor f = activation_.forward_tensor(linear1_.forward_tensor(x1, at(kLinear1)), at(kActivation));
  f = linear2_.forward_tensor(ff_dropout_[stream].forward_tensor(f, at(kFfDrop)), at(kLinear2));
  return norm2_.forward_tensor(sum(x1, out_dropout_[stream].forward_tensor(f, at(kOutDrop))), at(kNorm2));
}

std::pair<Tensor, Tensor> XLNetLayer::stream_backward(const Tensor& dy, Context& ctx, std::size_t stream) {
  const auto at = [&](Step step) -> Context& { return ctx.child(kStream + stream * kSteps + step); };
  const Tensor dz2 = norm2_.backward_input_tensor(dy, at(kNorm2));
  Tensor df = linear2_.backward_input_tensor(out_dropout_[stream].backward_input_tensor(dz2, at(kOutDrop)),
                                             at(kLinear2));
  df = activation_.backward_input_tensor(ff_dropout_[stream].backward_input_tensor(df, at(kFfDrop)), at(kActivation));
  const Tensor dx1 = sum(dz2, linear1_.backward_input_tensor(df, at(kLinear1)));
  const Tensor dz1 = norm1_.backward_input_tensor(dx1, at(kNorm1));
  return {dz1, attn_dropout_[stream].backward_input_tensor(dz1, at(kAttnDrop))};
}

TensorList XLNetLayer::forward(const TensorList& inputs, Context& ctx) {
  check_streams(*this, inputs, rel_attn_.embed_dim());
  const TensorList attended = rel_attn_.forward(inputs, ctx.child(kAttn));
  ctx.save_shape("stream", inputs[0].shape());
  return {stream_forward(inputs[0], attended[0], ctx, 0), stream_forward(inputs[1], attended[1], ctx, 1), inputs[2]};
}

TensorList XLNetLayer::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(grad_outputs.size() == 3, describe(), ": expected gradients of {h, g, ranks}, got ", grad_outputs.size());
  const Shape& shape = ctx.get_shape("stream");
  const DType dtype = norm1_.weight().value.dtype();
  const auto [dh, da_h] = stream_backward(defined_or_zeros(grad_outputs[0], shape, dtype), ctx, 0);
  const auto [dg, da_g] = stream_backward(defined_or_zeros(grad_outputs[1], shape, dtype), ctx, 1);
  const TensorList d_attn = rel_attn_.backward_input({da_h, da_g}, ctx.child(kAttn));
  // The ranks pass through: their gradient is what arrived for them (the masks add nothing).
  return {sum(dh, d_attn[0]), sum(dg, d_attn[1]), defined_or_zeros(grad_outputs[2], Shape{shape[0], shape[1]}, dtype)};
}

void XLNetLayer::backward_weight(Context& ctx) {
  for (std::size_t stream = 0; stream < 2; ++stream) {
    linear2_.backward_weight(ctx.child(kStream + stream * kSteps + kLinear2));
    linear1_.backward_weight(ctx.child(kStream + stream * kSteps + kLinear1));
  }
  rel_attn_.backward_weight(ctx.child(kAttn));
  ctx.clear();
}

std::vector<Shape> XLNetLayer::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 3, describe(), ": expects shapes of {h, g, ranks}");
  return input_shapes;
}

double XLNetLayer::flops(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  Shape hidden = x;
  hidden[-1] = linear1_.out_features();
  const double per_stream = linear1_.flops({x}) + activation_.flops({hidden}) + linear2_.flops({hidden}) +
                            2.0 * norm1_.flops({x}) + 4.0 * static_cast<double>(x.numel());
  return rel_attn_.flops(input_shapes) + 2.0 * per_stream;
}

std::size_t XLNetLayer::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  Shape hidden = x;
  hidden[-1] = linear1_.out_features();
  const std::size_t per_stream = linear1_.activation_bytes({x}) + activation_.activation_bytes({hidden}) +
                                 linear2_.activation_bytes({hidden}) + 2 * norm1_.activation_bytes({x});
  return rel_attn_.activation_bytes(input_shapes) + 2 * per_stream;
}

// ---- head --------------------------------------------------------------------------------------

XLNetHead::XLNetHead(const XLNetOptions& o) : dropout_(o.dropout), output_(o.d_model, o.vocab) {
  output_.set_init(xlnet_init(), Init::zeros());
}

std::vector<std::pair<std::string, Layer*>> XLNetHead::children() {
  return {{"dropout", &dropout_}, {"output", &output_}};
}

TensorList XLNetHead::forward(const TensorList& inputs, Context& ctx) {
  check_streams(*this, inputs, output_.in_features());
  ctx.save_shape("stream", inputs[0].shape());
  return {output_.forward_tensor(dropout_.forward_tensor(inputs[1], ctx.child(0)), ctx.child(1))};
}

TensorList XLNetHead::backward_input(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  const Shape shape = ctx.get_shape("stream");
  const Tensor dg =
      dropout_.backward_input_tensor(output_.backward_input_tensor(grad_outputs[0], ctx.child(1)), ctx.child(0));
  return {Tensor::zeros(shape, dg.dtype()), dg, Tensor::zeros(Shape{shape[0], shape[1]}, dg.dtype())};
}

void XLNetHead::backward_weight(Context& ctx) {
  output_.backward_weight(ctx.child(1));
  ctx.clear();
}

std::vector<Shape> XLNetHead::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 3, describe(), ": expects shapes of {h, g, ranks}");
  return output_.output_shapes({input_shapes[1]});
}

double XLNetHead::flops(const std::vector<Shape>& input_shapes) const {
  return output_.flops({input_shapes.at(1)}) + dropout_.flops({input_shapes.at(1)});
}

std::size_t XLNetHead::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return output_.activation_bytes({input_shapes.at(1)});
}

}  // namespace loom
