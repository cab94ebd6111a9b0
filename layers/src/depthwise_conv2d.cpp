// DepthwiseConv2d (see depthwise_conv2d.h): argument checks and the context around the direct
// CPU kernels of cpu/depthwise_conv.cpp.
#include <loom/layers/depthwise_conv2d.h>

#include <loom/core/memory.h>

#include "cpu/depthwise_conv.h"
#include "layer_util.h"

namespace loom {

DepthwiseConv2d::DepthwiseConv2d(const DepthwiseConv2dOptions& options) : options_(options) {
  const auto& o = options_;
  LOOM_CHECK(o.channels > 0, "DepthwiseConv2d: channels must be positive, got ", o.channels);
  LOOM_CHECK(o.kernel.h > 0 && o.kernel.w > 0 && o.stride.h > 0 && o.stride.w > 0 && o.dilation.h > 0 &&
                 o.dilation.w > 0 && o.padding.h >= 0 && o.padding.w >= 0,
             "DepthwiseConv2d: kernel, stride and dilation must be positive and padding non-negative");
  const std::int64_t fan_in = o.kernel.h * o.kernel.w;
  weight_ = make_parameter("weight", {o.channels, 1, o.kernel.h, o.kernel.w}, Init::fan_in_uniform(fan_in));
  if (o.bias) bias_ = make_parameter("bias", {o.channels}, Init::fan_in_uniform(fan_in));
}

std::vector<Parameter*> DepthwiseConv2d::local_parameters() {
  if (options_.bias) return {&weight_, &bias_};
  return {&weight_};
}

WindowGeometry DepthwiseConv2d::geometry(const Shape& input) const {
  return {input[2], input[3], options_.kernel, options_.stride, options_.padding, options_.dilation};
}

void DepthwiseConv2d::check_input(const Tensor& x, const char* what) const {
  detail::check_like(*this, what, x, weight_.value, "weight");
  LOOM_CHECK(!x.device().is_cuda(), describe(), ": has no CUDA path (CPU and sim tensors only)");
}

Tensor DepthwiseConv2d::forward_tensor(const Tensor& x, Context& ctx) {
  LOOM_CHECK(x.rank() == 4 && x.size(1) == options_.channels, describe(), ": input shape ", x.shape().str(),
             " is not [N, ", options_.channels, ", H, W]");
  check_input(x, "input");
  const WindowGeometry g = geometry(x.shape());
  MemoryCategoryScope scope(MemoryCategory::activations);
  Tensor y = Tensor::empty({x.size(0), options_.channels, g.out_height, g.out_width}, x.dtype(), x.device());
  ctx.save("input", x);
  detail::depthwise::forward(x, weight_.value, bias_.value, g, y);
  return y;
}

Tensor DepthwiseConv2d::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  const Tensor& x = ctx.get("input");
  const WindowGeometry g = geometry(x.shape());
  detail::check_same_shape(*this, "output gradient", grad_y, {x.size(0), options_.channels, g.out_height, g.out_width});
  check_input(grad_y, "output gradient");
  ctx.save("grad_output", grad_y);
  Tensor grad_x = detail::empty_like(x);
  detail::depthwise::input_gradient(grad_y, weight_.value, g, grad_x);
  return grad_x;
}

void DepthwiseConv2d::backward_weight(Context& ctx) {
  const Tensor& x = ctx.get("input");
  detail::depthwise::accumulate_weight_gradient(x, ctx.get("grad_output"), geometry(x.shape()), weight_.grad,
                                                bias_.grad);
  ctx.clear();
}

std::vector<Shape> DepthwiseConv2d::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1 && input_shapes[0].rank() == 4 && input_shapes[0][1] == options_.channels,
             "DepthwiseConv2d: expected one input shape [N, ", options_.channels, ", H, W]");
  const WindowGeometry g = geometry(input_shapes[0]);
  return {Shape{input_shapes[0][0], options_.channels, g.out_height, g.out_width}};
}

double DepthwiseConv2d::flops(const std::vector<Shape>& input_shapes) const {
  return 2.0 * static_cast<double>(output_shapes(input_shapes)[0].numel() * options_.kernel.h * options_.kernel.w);
}

std::size_t DepthwiseConv2d::activation_bytes(const std::vector<Shape>& input_shapes) const {
  output_shapes(input_shapes);
  return detail::f32_bytes(input_shapes[0]);
}

}  // namespace loom
