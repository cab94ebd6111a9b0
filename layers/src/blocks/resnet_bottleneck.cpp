// ResNet bottleneck block (see resnet_bottleneck.h). Child contexts: 0..8 the main path in order,
// 9 the downsample branch, 10 the final ReLU.
#include <loom/layers/resnet_bottleneck.h>

#include <iterator>

#include <loom/core/memory.h>
#include <loom/core/ops.h>

#include "cpu/blocked_layout.h"
#include "cpu/conv_path.h"
#include "layer_util.h"

namespace loom {

namespace {

std::int64_t width_of(const BottleneckOptions& o) { return o.planes * o.base_width / 64 * o.groups; }

Conv2dOptions conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride = 1,
                   std::int64_t groups = 1) {
  return {.in_channels = in,
          .out_channels = out,
          .kernel = kernel,
          .stride = stride,
          .padding = kernel / 2,
          .groups = groups,
          .bias = false};
}

constexpr std::size_t kDownsampleContext = 9, kOutputReluContext = 10;

bool onednn_path(const Conv2dOptions& o) { return detail::choose_conv_path(o, DType::f32) == detail::ConvPath::onednn; }

}  // namespace

// The block runs in the blocked layout (cpu/blocked_layout.h) on the CPU in f32 with f32 operands,
// when every convolution takes oneDNN's path and every channel count is a multiple of 16 (no
// groups): its input is reordered once, its output once, and nothing in between.
bool ResNetBottleneck::uses_blocked_layout(const Tensor& x) const {
  constexpr std::int64_t lanes = detail::blocked::kLanes;
  const BottleneckOptions& o = options_;
  if (!detail::blocked::enabled() || x.device().is_cuda() || x.dtype() != DType::f32 || x.rank() != 4 ||
      ops::gemm_operand_dtype() != DType::f32)
    return false;
  if (o.groups != 1 || o.in_channels % lanes != 0 || width_of(o) % lanes != 0 || (o.planes * kExpansion) % lanes != 0)
    return false;
  return onednn_path(conv1_.options()) && onednn_path(conv2_.options()) && onednn_path(conv3_.options()) &&
         (!downsample_ || onednn_path(conv(o.in_channels, o.planes * kExpansion, 1, o.stride)));
}

ResNetBottleneck::ResNetBottleneck(const BottleneckOptions& options)
    : options_(options),
      conv1_(conv(options.in_channels, width_of(options), 1)),
      conv2_(conv(width_of(options), width_of(options), 3, options.stride, options.groups)),
      conv3_(conv(width_of(options), options.planes * kExpansion, 1)),
      bn1_({.channels = width_of(options)}),
      bn2_({.channels = width_of(options)}),
      bn3_({.channels = options.planes * kExpansion}) {
  const std::int64_t out = options.planes * kExpansion;
  if (options.stride != 1 || options.in_channels != out) {
    downsample_ = std::make_unique<Sequential>();
    downsample_->add(std::make_unique<Conv2d>(conv(options.in_channels, out, 1, options.stride)));
    downsample_->add(std::make_unique<BatchNorm2d>(BatchNorm2dOptions{.channels = out}));
  }
}

std::vector<std::pair<std::string, Layer*>> ResNetBottleneck::children() {
  std::vector<std::pair<std::string, Layer*>> out{{"conv1", &conv1_}, {"bn1", &bn1_}, {"conv2", &conv2_},
                                                  {"bn2", &bn2_},     {"conv3", &conv3_}, {"bn3", &bn3_}};
  if (downsample_) out.emplace_back("downsample", downsample_.get());
  return out;
}

TensorList ResNetBottleneck::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 1);
  MemoryCategoryScope scope(MemoryCategory::activations);
  const bool blocked = uses_blocked_layout(inputs[0]);
  const TensorList x = blocked ? TensorList{detail::blocked::to_blocked(inputs[0])} : inputs;
  Layer* main_path[] = {&conv1_, &bn1_, &relu1_, &conv2_, &bn2_, &relu2_, &conv3_, &bn3_};
  TensorList h = x;
  for (std::size_t i = 0; i < std::size(main_path); ++i) h = main_path[i]->forward(h, ctx.child(i));
  const TensorList identity = downsample_ ? downsample_->forward(x, ctx.child(kDownsampleContext)) : x;
  detail::check_same_shape(*this, "residual branch", identity[0], h[0].shape());
  Tensor sum = Tensor::empty(h[0].shape(), h[0].dtype(), h[0].device());
  ops::add(h[0], identity[0], sum);
  TensorList y = relu_out_.forward({sum}, ctx.child(kOutputReluContext));
  // The NCHW output remembers its blocked twin, which the next block's to_blocked takes as it is
  // (blocked_layout.h): no reorder there, and one copy kept for the backward.
  if (blocked) y[0] = detail::blocked::to_nchw(y[0]);
  return y;
}

TensorList ResNetBottleneck::backward_input(const TensorList& grad_outputs, Context& ctx) {
  MemoryCategoryScope scope(MemoryCategory::activations);
  // bn3 kept its input: blocked when the forward ran blocked.
  const bool blocked = detail::blocked::is_blocked(ctx.child(7).get("input"));
  const TensorList grad_y = blocked ? TensorList{detail::blocked::to_blocked(grad_outputs.at(0))} : grad_outputs;
  const TensorList grad_sum = relu_out_.backward(grad_y, ctx.child(kOutputReluContext));
  Layer* main_path[] = {&conv1_, &bn1_, &relu1_, &conv2_, &bn2_, &relu2_, &conv3_, &bn3_};
  TensorList g = grad_sum;
  for (std::size_t i = std::size(main_path); i-- > 0;) g = main_path[i]->backward_input(g, ctx.child(i));
  const TensorList grad_identity =
      downsample_ ? downsample_->backward_input(grad_sum, ctx.child(kDownsampleContext)) : grad_sum;
  Tensor grad_x = Tensor::empty(g[0].shape(), g[0].dtype(), g[0].device());
  ops::add(g[0], grad_identity[0], grad_x);
  return {blocked ? detail::blocked::to_nchw(grad_x) : grad_x};
}

void ResNetBottleneck::backward_weight(Context& ctx) {
  Layer* main_path[] = {&conv1_, &bn1_, &relu1_, &conv2_, &bn2_, &relu2_, &conv3_, &bn3_};
  for (std::size_t i = std::size(main_path); i-- > 0;) main_path[i]->backward_weight(ctx.child(i));
  if (downsample_) downsample_->backward_weight(ctx.child(kDownsampleContext));
  ctx.clear();
}

std::vector<Shape> ResNetBottleneck::output_shapes(const std::vector<Shape>& input_shapes) const {
  return conv3_.output_shapes(conv2_.output_shapes(conv1_.output_shapes(input_shapes)));
}

double ResNetBottleneck::flops(const std::vector<Shape>& input_shapes) const {
  const std::vector<Shape> s1 = conv1_.output_shapes(input_shapes), s2 = conv2_.output_shapes(s1),
                           s3 = conv3_.output_shapes(s2);
  double total = conv1_.flops(input_shapes) + conv2_.flops(s1) + conv3_.flops(s2);
  total += bn1_.flops(s1) + bn2_.flops(s2) + bn3_.flops(s3) + 3.0 * static_cast<double>(s3[0].numel());
  if (downsample_) total += downsample_->flops(input_shapes);
  return total;
}

std::size_t ResNetBottleneck::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const std::vector<Shape> s1 = conv1_.output_shapes(input_shapes), s2 = conv2_.output_shapes(s1),
                           s3 = conv3_.output_shapes(s2);
  // Each conv keeps its input, each BatchNorm its input, each ReLU its output.
  std::size_t total = conv1_.activation_bytes(input_shapes) + conv2_.activation_bytes(s1) +
                      conv3_.activation_bytes(s2) + bn1_.activation_bytes(s1) + bn2_.activation_bytes(s2) +
                      bn3_.activation_bytes(s3) + relu1_.activation_bytes(s1) + relu2_.activation_bytes(s2) +
                      relu_out_.activation_bytes(s3);
  if (downsample_) total += downsample_->activation_bytes(input_shapes);
  return total;
}

}  // namespace loom
