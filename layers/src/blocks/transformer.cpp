// Transformer encoder and decoder blocks (see transformer.h). Each residual step is written out:
//   post-LN  forward h = norm(x + drop(f(x)))     backward dz = norm'(dh); dx = dz + f'(drop'(dz))
//   pre-LN   forward h = x + drop(f(norm(x)))     backward dx = dh + norm'(f'(drop'(dh)))
#include <loom/layers/transformer.h>

#include <loom/core/ops.h>

#include "layer_util.h"

namespace loom {

namespace {

Tensor sum(const Tensor& a, const Tensor& b) {
  Tensor out = detail::empty_like(a);
  ops::add(a, b, out);
  return out;
}

// Child context slots.
enum Slot : std::size_t { kSelfAttn, kDrop1, kNorm1, kCrossAttn, kDrop2, kNorm2, kFeedForward, kDrop3, kNorm3 };

}  // namespace

// ---- FeedForward -------------------------------------------------------------------------------

FeedForward::FeedForward(const TransformerOptions& o)
    : linear1(o.d_model, o.d_ff), activation(o.activation), dropout(o.dropout), linear2(o.d_ff, o.d_model) {}

Tensor FeedForward::forward(const Tensor& x, Context& ctx) {
  Tensor h = linear1.forward_tensor(x, ctx.child(0));
  h = activation.forward_tensor(h, ctx.child(1));
  h = dropout.forward_tensor(h, ctx.child(2));
  return linear2.forward_tensor(h, ctx.child(3));
}

Tensor FeedForward::backward_input(const Tensor& grad, Context& ctx) {
  Tensor g = linear2.backward_input_tensor(grad, ctx.child(3));
  g = dropout.backward_input_tensor(g, ctx.child(2));
  g = activation.backward_input_tensor(g, ctx.child(1));
  return linear1.backward_input_tensor(g, ctx.child(0));
}

void FeedForward::backward_weight(Context& ctx) {
  linear2.backward_weight(ctx.child(3));
  linear1.backward_weight(ctx.child(0));
}

double FeedForward::flops(const Shape& x) const {
  Shape hidden = x;
  hidden[-1] = linear1.out_features();
  return linear1.flops({x}) + activation.flops({hidden}) + dropout.flops({hidden}) + linear2.flops({hidden});
}

std::size_t FeedForward::activation_bytes(const Shape& x) const {
  Shape hidden = x;
  hidden[-1] = linear1.out_features();
  return linear1.activation_bytes({x}) + activation.activation_bytes({hidden}) + linear2.activation_bytes({hidden});
}

// ---- encoder -----------------------------------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerOptions& o)
    : options_(o),
      self_attn_(o.d_model, o.heads, false, o.causal, o.dropout),
      ff_(o),
      norm1_(o.d_model, o.layer_norm_eps),
      norm2_(o.d_model, o.layer_norm_eps),
      dropout1_(o.dropout),
      dropout2_(o.dropout) {}

std::vector<std::pair<std::string, Layer*>> TransformerEncoderLayer::children() {
  return {{"self_attn", &self_attn_},   {"linear1", &ff_.linear1}, {"activation", &ff_.activation},
          {"dropout", &ff_.dropout},    {"linear2", &ff_.linear2}, {"norm1", &norm1_},
          {"norm2", &norm2_},           {"dropout1", &dropout1_},  {"dropout2", &dropout2_}};
}

TensorList TransformerEncoderLayer::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(inputs.size() == 1 || inputs.size() == 2, describe(), ": expected {x} or {x, key_padding_mask}, got ",
             inputs.size(), " inputs");
  const Tensor& x = inputs[0];
  const auto attend = [&](const Tensor& in) {
    TensorList args{in};
    if (inputs.size() == 2) args.push_back(inputs[1]);
    return dropout1_.forward_tensor(self_attn_.forward(args, ctx.child(kSelfAttn))[0], ctx.child(kDrop1));
  };
  ctx.save_shape("inputs", Shape{static_cast<std::int64_t>(inputs.size())});
  Context& ff_ctx = ctx.child(kFeedForward);
  if (options_.norm_first) {
    const Tensor h = sum(x, attend(norm1_.forward_tensor(x, ctx.child(kNorm1))));
    const Tensor f = ff_.forward(norm2_.forward_tensor(h, ctx.child(kNorm2)), ff_ctx);
    return {sum(h, dropout2_.forward_tensor(f, ctx.child(kDrop2)))};
  }
  const Tensor h = norm1_.forward_tensor(sum(x, attend(x)), ctx.child(kNorm1));
  const Tensor f = dropout2_.forward_tensor(ff_.forward(h, ff_ctx), ctx.child(kDrop2));
  return {norm2_.forward_tensor(sum(h, f), ctx.child(kNorm2))};
}

TensorList TransformerEncoderLayer::backward_input(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  const Tensor& dy = grad_outputs[0];
  Context& ff_ctx = ctx.child(kFeedForward);
  const auto attend_back = [&](const Tensor& g) {
    return self_attn_.backward_input({dropout1_.backward_input_tensor(g, ctx.child(kDrop1))}, ctx.child(kSelfAttn))[0];
  };
  Tensor dx;
  if (options_.norm_first) {
    const Tensor df = ff_.backward_input(dropout2_.backward_input_tensor(dy, ctx.child(kDrop2)), ff_ctx);
    const Tensor dh = sum(dy, norm2_.backward_input_tensor(df, ctx.child(kNorm2)));
    dx = sum(dh, norm1_.backward_input_tensor(attend_back(dh), ctx.child(kNorm1)));
  } else {
    const Tensor dz2 = norm2_.backward_input_tensor(dy, ctx.child(kNorm2));
    const Tensor dh = sum(dz2, ff_.backward_input(dropout2_.backward_input_tensor(dz2, ctx.child(kDrop2)), ff_ctx));
    const Tensor dz1 = norm1_.backward_input_tensor(dh, ctx.child(kNorm1));
    dx = sum(dz1, attend_back(dz1));
  }
  TensorList grads{dx};
  if (ctx.get_shape("inputs")[0] == 2) grads.emplace_back();
  return grads;
}

void TransformerEncoderLayer::backward_weight(Context& ctx) {
  ff_.backward_weight(ctx.child(kFeedForward));
  self_attn_.backward_weight(ctx.child(kSelfAttn));
  ctx.clear();
}

std::vector<Shape> TransformerEncoderLayer::output_shapes(const std::vector<Shape>& input_shapes) const {
  return self_attn_.output_shapes(input_shapes);
}

double TransformerEncoderLayer::flops(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  return self_attn_.flops({x}) + ff_.flops(x) + norm1_.flops({x}) + norm2_.flops({x}) + 4.0 * static_cast<double>(x.numel());
}

std::size_t TransformerEncoderLayer::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  return self_attn_.activation_bytes({x}) + ff_.activation_bytes(x) + norm1_.activation_bytes({x}) +
         norm2_.activation_bytes({x});
}

// ---- decoder -----------------------------------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerOptions& o)
    : options_(o),
      self_attn_(o.d_model, o.heads, false, true, o.dropout),
      cross_attn_(o.d_model, o.heads, true, false, o.dropout),
      ff_(o),
      norm1_(o.d_model, o.layer_norm_eps),
      norm2_(o.d_model, o.layer_norm_eps),
      norm3_(o.d_model, o.layer_norm_eps),
      dropout1_(o.dropout),
      dropout2_(o.dropout),
      dropout3_(o.dropout) {}

std::vector<std::pair<std::string, Layer*>> TransformerDecoderLayer::children() {
  return {{"self_attn", &self_attn_}, {"multihead_attn", &cross_attn_}, {"linear1", &ff_.linear1},
          {"activation", &ff_.activation}, {"dropout", &ff_.dropout}, {"linear2", &ff_.linear2},
          {"norm1", &norm1_}, {"norm2", &norm2_}, {"norm3", &norm3_},
          {"dropout1", &dropout1_}, {"dropout2", &dropout2_}, {"dropout3", &dropout3_}};
}

TensorList TransformerDecoderLayer::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 2);
  const Tensor& x = inputs[0];
  const Tensor& memory = inputs[1];
  const auto self_step = [&](const Tensor& in) {
    return dropout1_.forward_tensor(self_attn_.forward({in}, ctx.child(kSelfAttn))[0], ctx.child(kDrop1));
  };
  const auto cross_step = [&](const Tensor& in) {
    return dropout2_.forward_tensor(cross_attn_.forward({in, memory}, ctx.child(kCrossAttn))[0], ctx.child(kDrop2));
  };
  const auto ff_step = [&](const Tensor& in) {
    return dropout3_.forward_tensor(ff_.forward(in, ctx.child(kFeedForward)), ctx.child(kDrop3));
  };
  if (options_.norm_first) {
    const Tensor h1 = sum(x, self_step(norm1_.forward_tensor(x, ctx.child(kNorm1))));
    const Tensor h2 = sum(h1, cross_step(norm2_.forward_tensor(h1, ctx.child(kNorm2))));
    return {sum(h2, ff_step(norm3_.forward_tensor(h2, ctx.child(kNorm3)))), memory};
  }
  const Tensor h1 = norm1_.forward_tensor(sum(x, self_step(x)), ctx.child(kNorm1));
  const Tensor h2 = norm2_.forward_tensor(sum(h1, cross_step(h1)), ctx.child(kNorm2));
  return {norm3_.forward_tensor(sum(h2, ff_step(h2)), ctx.child(kNorm3)), memory};
}

TensorList TransformerDecoderLayer::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty() && grad_outputs[0].defined(), describe(), ": missing output gradient");
  const Tensor& dy = grad_outputs[0];
  Tensor d_memory;
  const auto self_back = [&](const Tensor& g) {
    return self_attn_.backward_input({dropout1_.backward_input_tensor(g, ctx.child(kDrop1))}, ctx.child(kSelfAttn))[0];
  };
  const auto cross_back = [&](const Tensor& g) {
    TensorList grads =
        cross_attn_.backward_input({dropout2_.backward_input_tensor(g, ctx.child(kDrop2))}, ctx.child(kCrossAttn));
    d_memory = grads[1];
    return grads[0];
  };
  const auto ff_back = [&](const Tensor& g) {
    return ff_.backward_input(dropout3_.backward_input_tensor(g, ctx.child(kDrop3)), ctx.child(kFeedForward));
  };
  Tensor dx;
  if (options_.norm_first) {
    const Tensor dh2 = sum(dy, norm3_.backward_input_tensor(ff_back(dy), ctx.child(kNorm3)));
    const Tensor dh1 = sum(dh2, norm2_.backward_input_tensor(cross_back(dh2), ctx.child(kNorm2)));
    dx = sum(dh1, norm1_.backward_input_tensor(self_back(dh1), ctx.child(kNorm1)));
  } else {
    const Tensor dz3 = norm3_.backward_input_tensor(dy, ctx.child(kNorm3));
    const Tensor dh2 = sum(dz3, ff_back(dz3));
    const Tensor dz2 = norm2_.backward_input_tensor(dh2, ctx.child(kNorm2));
    const Tensor dh1 = sum(dz2, cross_back(dz2));
    const Tensor dz1 = norm1_.backward_input_tensor(dh1, ctx.child(kNorm1));
    dx = sum(dz1, self_back(dz1));
  }
  if (grad_outputs.size() > 1 && grad_outputs[1].defined()) d_memory = sum(d_memory, grad_outputs[1]);
  return {dx, d_memory};
}

void TransformerDecoderLayer::backward_weight(Context& ctx) {
  ff_.backward_weight(ctx.child(kFeedForward));
  cross_attn_.backward_weight(ctx.child(kCrossAttn));
  self_attn_.backward_weight(ctx.child(kSelfAttn));
  ctx.clear();
}

std::vector<Shape> TransformerDecoderLayer::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 2, describe(), ": expects shapes of {tgt, memory}");
  return input_shapes;
}

double TransformerDecoderLayer::flops(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  return self_attn_.flops({x}) + cross_attn_.flops(input_shapes) + ff_.flops(x) + 3.0 * norm1_.flops({x}) +
         6.0 * static_cast<double>(x.numel());
}

std::size_t TransformerDecoderLayer::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  return self_attn_.activation_bytes({x}) + cross_attn_.activation_bytes(input_shapes) + ff_.activation_bytes(x) +
         3 * norm1_.activation_bytes({x});
}

}  // namespace loom
