// FactorizedReduce (see factorized_reduce.h). Child contexts: 0 relu, 1 conv1, 2 pad, 3 conv2, 4 bn.
#include <loom/layers/factorized_reduce.h>

#include <loom/core/memory.h>
#include <loom/core/ops.h>

#include "../channel_concat.h"
#include "../layer_util.h"

namespace loom {

namespace {

Conv2dOptions half_conv(std::int64_t in, std::int64_t out) {
  LOOM_CHECK(in > 0 && out > 0 && out % 2 == 0, "FactorizedReduce: channels must be positive and out even, got in ",
             in, ", out ", out);
  return {.in_channels = in, .out_channels = out / 2, .kernel = 1, .stride = 2, .bias = false};
}

constexpr std::size_t kRelu = 0, kConv1 = 1, kPad = 2, kConv2 = 3, kBn = 4;

}  // namespace

FactorizedReduce::FactorizedReduce(std::int64_t in_channels, std::int64_t out_channels)
    : out_channels_(out_channels),
      conv1_(half_conv(in_channels, out_channels)),
      pad_({.left = -1, .right = 1, .top = -1, .bottom = 1}),
      conv2_(half_conv(in_channels, out_channels)),
      bn_({.channels = out_channels}) {}

std::vector<std::pair<std::string, Layer*>> FactorizedReduce::children() {
  return {{"conv1", &conv1_}, {"conv2", &conv2_}, {"bn", &bn_}};
}

TensorList FactorizedReduce::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 1);
  MemoryCategoryScope scope(MemoryCategory::activations);
  const Tensor r = relu_.forward_tensor(inputs[0], ctx.child(kRelu));
  const Tensor even = conv1_.forward_tensor(r, ctx.child(kConv1));
  const Tensor odd = conv2_.forward_tensor(pad_.forward_tensor(r, ctx.child(kPad)), ctx.child(kConv2));
  return {bn_.forward_tensor(detail::concat_channels({even, odd}), ctx.child(kBn))};
}

TensorList FactorizedReduce::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(grad_outputs.size() == 1 && grad_outputs[0].defined(), describe(), ": expected one output gradient");
  MemoryCategoryScope scope(MemoryCategory::activations);
  const Tensor grad_cat = bn_.backward_input_tensor(grad_outputs[0], ctx.child(kBn));
  const std::vector<Tensor> halves = detail::split_channels(grad_cat, {out_channels_ / 2, out_channels_ / 2});
  const Tensor from_even = conv1_.backward_input_tensor(halves[0], ctx.child(kConv1));
  const Tensor from_odd =
      pad_.backward_input_tensor(conv2_.backward_input_tensor(halves[1], ctx.child(kConv2)), ctx.child(kPad));
  Tensor grad_r = detail::empty_like(from_even);
  ops::add(from_even, from_odd, grad_r);
  return {relu_.backward_input_tensor(grad_r, ctx.child(kRelu))};
}

void FactorizedReduce::backward_weight(Context& ctx) {
  conv1_.backward_weight(ctx.child(kConv1));
  conv2_.backward_weight(ctx.child(kConv2));
  bn_.backward_weight(ctx.child(kBn));
  ctx.clear();
}

std::vector<Shape> FactorizedReduce::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1, "FactorizedReduce: expected one input shape");
  Shape out = conv1_.output_shapes(input_shapes)[0];
  const Shape odd = conv2_.output_shapes(pad_.output_shapes(input_shapes))[0];
  LOOM_CHECK(odd == out, "FactorizedReduce: the two paths disagree (", out.str(), " and ", odd.str(), ")");
  return {Shape{out[0], out_channels_, out[2], out[3]}};
}

double FactorizedReduce::flops(const std::vector<Shape>& input_shapes) const {
  const std::vector<Shape> out = output_shapes(input_shapes);
  return static_cast<double>(input_shapes[0].numel()) + conv1_.flops(input_shapes) +
         conv2_.flops(pad_.output_shapes(input_shapes)) + bn_.flops(out);
}

std::size_t FactorizedReduce::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const std::vector<Shape> out = output_shapes(input_shapes);
  return relu_.activation_bytes(input_shapes) + conv1_.activation_bytes(input_shapes) +
         conv2_.activation_bytes(pad_.output_shapes(input_shapes)) + bn_.activation_bytes(out);
}

}  // namespace loom
