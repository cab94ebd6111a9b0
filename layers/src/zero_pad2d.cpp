// ZeroPad2d (see zero_pad2d.h): one loop that copies the window two planes share, used both ways.
#include <loom/layers/zero_pad2d.h>

#include <algorithm>

#include <loom/core/memory.h>

#include "layer_util.h"

namespace loom {

namespace {

// to[n, c, h + top, w + left] = from[n, c, h, w] wherever both are inside their planes; the rest
// of `to` is zero (it comes from Tensor::zeros). Backward calls it with the signs flipped.
template <typename T>
void copy_shifted(const Tensor& from, Tensor& to, std::int64_t top, std::int64_t left) {
  const std::int64_t planes = from.size(0) * from.size(1);
  const std::int64_t fh = from.size(2), fw = from.size(3), th = to.size(2), tw = to.size(3);
  const std::int64_t h_begin = std::max<std::int64_t>(0, -top), h_end = std::min(fh, th - top);
  const std::int64_t w_begin = std::max<std::int64_t>(0, -left), w_end = std::min(fw, tw - left);
  const T* src = from.data<T>();
  T* dst = to.data<T>();
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t h = h_begin; h < h_end; ++h)
      for (std::int64_t w = w_begin; w < w_end; ++w) dst[(p * th + h + top) * tw + w + left] = src[(p * fh + h) * fw + w];
}

void check_cpu(const Layer& layer, const Tensor& x) {
  LOOM_CHECK(!x.device().is_cuda(), layer.describe(), ": has no CUDA path (CPU and sim tensors only), got a tensor on ",
             x.device().str());
}

}  // namespace

Shape ZeroPad2d::padded(const Shape& input) const {
  LOOM_CHECK(input.rank() == 4, describe(), ": input shape ", input.str(), " is not [N, C, H, W]");
  const std::int64_t h = input[2] + options_.top + options_.bottom, w = input[3] + options_.left + options_.right;
  LOOM_CHECK(h > 0 && w > 0, describe(), ": padding (left ", options_.left, ", right ", options_.right, ", top ",
             options_.top, ", bottom ", options_.bottom, ") leaves nothing of ", input.str());
  return {input[0], input[1], h, w};
}

Tensor ZeroPad2d::forward_tensor(const Tensor& x, Context& ctx) {
  const Shape out_shape = padded(x.shape());
  check_cpu(*this, x);
  MemoryCategoryScope scope(MemoryCategory::activations);
  Tensor y = Tensor::zeros(out_shape, x.dtype(), x.device());
  ctx.save_shape("input", x.shape());
  dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) { copy_shifted<T>(x, y, options_.top, options_.left); });
  return y;
}

Tensor ZeroPad2d::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  const Shape input_shape = ctx.get_shape("input");
  detail::check_same_shape(*this, "output gradient", grad_y, padded(input_shape));
  check_cpu(*this, grad_y);
  Tensor grad_x = Tensor::zeros(input_shape, grad_y.dtype(), grad_y.device());
  dispatch_floating(grad_y.dtype(), describe(),
                    [&]<typename T>(T) { copy_shifted<T>(grad_y, grad_x, -options_.top, -options_.left); });
  ctx.clear();
  return grad_x;
}

std::vector<Shape> ZeroPad2d::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1, describe(), ": expected one input shape");
  return {padded(input_shapes[0])};
}

}  // namespace loom
