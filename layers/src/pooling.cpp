// MaxPool2d, AvgPool2d and GlobalAvgPool2d (see pooling.h): CPU loops here, cuDNN in
// cuda/pooling.cpp. Window bounds follow PyTorch's CPU kernels exactly, padding included.
#include <loom/layers/pooling.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/parallel.h>

#include "layer_util.h"
#include "cuda/pooling.h"

namespace loom {

namespace {

void check_pool_options(const char* type, const Pool2dOptions& o) {
  const Size2 stride = o.stride.value_or(o.kernel);
  LOOM_CHECK(o.kernel.h > 0 && o.kernel.w > 0 && stride.h > 0 && stride.w > 0, type,
             ": kernel and stride must be positive");
  LOOM_CHECK(o.padding.h >= 0 && o.padding.w >= 0 && 2 * o.padding.h <= o.kernel.h && 2 * o.padding.w <= o.kernel.w,
             type, ": padding must be non-negative and at most half the kernel (PyTorch's rule)");
}

void check_nchw(const Layer& layer, const Tensor& x) {
  LOOM_CHECK(x.rank() == 4, layer.describe(), ": input shape ", x.shape().str(), " is not [N, C, H, W]");
  LOOM_CHECK(is_floating(x.dtype()), layer.describe(), ": input dtype ", dtype_name(x.dtype()), " is not floating");
}

// Clamped window of output row/column `o`: [begin, end) inside the input, and the padded extent
// (end of the window clipped to the padded input) that count_include_pad divides by.
struct Window {
  std::int64_t begin, end, padded_extent;
};

Window window(std::int64_t o, std::int64_t kernel, std::int64_t stride, std::int64_t padding, std::int64_t size) {
  const std::int64_t start = o * stride - padding;
  const std::int64_t padded_end = std::min(start + kernel, size + padding);
  return {std::max<std::int64_t>(start, 0), std::min(start + kernel, size), padded_end - start};
}

// Planes are independent: the loops below take a range of them, which split_planes hands out over
// loom's threads (about 16k input values per chunk).
template <typename F>
void split_planes(const WindowGeometry& g, std::int64_t planes, F body) {
  parallel_for(planes, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, g.plane())), body);
}

// The first largest value of a window and its index in the plane; a NaN wins (the first one).
// The common case, no NaN in the window, runs without branches on the data.
template <typename T>
void window_max(const T* in, std::int64_t width, const Window& rows, const Window& cols, T& best,
                std::int64_t& best_index) {
  best = -std::numeric_limits<T>::infinity();
  best_index = rows.begin * width + cols.begin;
  bool nan = false;
  for (std::int64_t ih = rows.begin; ih < rows.end; ++ih)
    for (std::int64_t iw = cols.begin; iw < cols.end; ++iw) {
      const T v = in[ih * width + iw];
      const bool take = v > best;
      best = take ? v : best;
      best_index = take ? ih * width + iw : best_index;
      nan |= v != v;
    }
  if (!nan) return;
  for (std::int64_t ih = rows.begin; ih < rows.end; ++ih)
    for (std::int64_t iw = cols.begin; iw < cols.end; ++iw)
      if (std::isnan(in[ih * width + iw])) {
        best = in[ih * width + iw];
        best_index = ih * width + iw;
        return;
      }
}

// Outputs [lo, hi) of one output row whose column windows lie wholly inside the input: the taps in
// window_max's order (row by row, left to right) with the running maxima of all these outputs side
// by side, so the loop runs across outputs. False when a NaN was seen: the caller redoes the row
// with window_max.
template <typename T>
bool row_max(const T* __restrict in, const WindowGeometry& g, const Window& rows, std::int64_t lo, std::int64_t hi,
             T* __restrict best, std::int32_t* __restrict index, T* __restrict tap) {
  const std::int64_t s = g.stride.w, left = -g.padding.w;
  for (std::int64_t ow = lo; ow < hi; ++ow) {
    best[ow] = -std::numeric_limits<T>::infinity();
    index[ow] = static_cast<std::int32_t>(rows.begin * g.width + ow * s + left);
  }
  bool nan = false;
  for (std::int64_t ih = rows.begin; ih < rows.end; ++ih)
    for (std::int64_t kw = 0; kw < g.kernel.w; ++kw) {
      const std::int64_t base = ih * g.width + left + kw;
      for (std::int64_t ow = lo; ow < hi; ++ow) tap[ow] = in[base + ow * s];  // the strided taps, contiguous
      int seen = 0;  // an int (not a bool) lets GCC vectorise the loop
      for (std::int64_t ow = lo; ow < hi; ++ow) {
        const T v = tap[ow], b = best[ow];
        const std::int32_t i = index[ow];
        const bool take = v > b;
        best[ow] = take ? v : b;
        index[ow] = take ? static_cast<std::int32_t>(base + ow * s) : i;
        seen |= static_cast<int>(v != v);
      }
      nan |= seen != 0;
    }
  return !nan;
}

template <typename T>
void max_pool_forward(const WindowGeometry& g, std::int64_t first, std::int64_t last, const T* x, T* y,
                      std::int32_t* argmax) {
  std::vector<Window> columns(static_cast<std::size_t>(g.out_width));
  for (std::int64_t ow = 0; ow < g.out_width; ++ow)
    columns[static_cast<std::size_t>(ow)] = window(ow, g.kernel.w, g.stride.w, g.padding.w, g.width);
  // Outputs [lo, hi) of a row have whole column windows.
  const std::int64_t lo = std::min(g.out_width, (g.padding.w + g.stride.w - 1) / g.stride.w);
  const std::int64_t room = g.width - g.kernel.w + g.padding.w;  // the last whole window starts at most here
  const std::int64_t hi = room < 0 ? lo : std::max(lo, std::min(g.out_width, room / g.stride.w + 1));
  std::vector<T> taps(static_cast<std::size_t>(g.out_width));
  for (std::int64_t p = first; p < last; ++p) {
    const T* in = x + p * g.plane();
    for (std::int64_t oh = 0; oh < g.out_height; ++oh) {
      const Window rows = window(oh, g.kernel.h, g.stride.h, g.padding.h, g.height);
      const std::int64_t row = (p * g.out_height + oh) * g.out_width;
      const bool whole = row_max(in, g, rows, lo, hi, y + row, argmax + row, taps.data());
      for (std::int64_t ow = 0; ow < g.out_width; ++ow) {
        if (whole && ow >= lo && ow < hi) continue;
        std::int64_t best_index = 0;
        window_max(in, g.width, rows, columns[static_cast<std::size_t>(ow)], y[row + ow], best_index);
        argmax[row + ow] = static_cast<std::int32_t>(best_index);
      }
    }
  }
}

template <typename T>
void max_pool_backward(const WindowGeometry& g, std::int64_t first, std::int64_t last, const T* grad_y,
                       const std::int32_t* argmax, T* grad_x) {
  for (std::int64_t p = first; p < last; ++p)
    for (std::int64_t i = 0; i < g.out_plane(); ++i)
      grad_x[p * g.plane() + argmax[p * g.out_plane() + i]] += grad_y[p * g.out_plane() + i];
}

// forward: y = window sums / divisor; backward (grad_y given): grad_x += grad_y / divisor spread
// over the window.
template <typename T, bool kBackward>
void avg_pool(const WindowGeometry& g, bool count_include_pad, std::int64_t first, std::int64_t last, const T* x,
              T* y, const T* grad_y, T* grad_x) {
  for (std::int64_t p = first; p < last; ++p) {
    for (std::int64_t oh = 0; oh < g.out_height; ++oh) {
      const Window rows = window(oh, g.kernel.h, g.stride.h, g.padding.h, g.height);
      for (std::int64_t ow = 0; ow < g.out_width; ++ow) {
        const Window cols = window(ow, g.kernel.w, g.stride.w, g.padding.w, g.width);
        const std::int64_t divisor = count_include_pad ? rows.padded_extent * cols.padded_extent
                                                       : (rows.end - rows.begin) * (cols.end - cols.begin);
        const std::int64_t out = (p * g.out_height + oh) * g.out_width + ow;
        if constexpr (kBackward) {
          const T share = grad_y[out] / static_cast<T>(divisor);
          T* gx = grad_x + p * g.plane();
          for (std::int64_t ih = rows.begin; ih < rows.end; ++ih)
            for (std::int64_t iw = cols.begin; iw < cols.end; ++iw) gx[ih * g.width + iw] += share;
        } else {
          const T* in = x + p * g.plane();
          T sum = 0;
          for (std::int64_t ih = rows.begin; ih < rows.end; ++ih)
            for (std::int64_t iw = cols.begin; iw < cols.end; ++iw) sum += in[ih * g.width + iw];
          y[out] = sum / static_cast<T>(divisor);
        }
      }
    }
  }
}

Shape pooled_shape(const Shape& input, const WindowGeometry& g) {
  return {input[0], input[1], g.out_height, g.out_width};
}

cuda_kernels::PoolMode average_mode(const Pool2dOptions& o) {
  return o.count_include_pad ? cuda_kernels::PoolMode::average_include_padding
                             : cuda_kernels::PoolMode::average_exclude_padding;
}

}  // namespace

// The window of a max or average pool over an NCHW input (stride defaults to the kernel).
namespace {
WindowGeometry pool_geometry(const Pool2dOptions& options, const Shape& input) {
  return {input[2], input[3], options.kernel, options.stride.value_or(options.kernel), options.padding};
}

// What both pools' forward and backward share: input checks, the result tensor, and the whole cuDNN
// path (`done` set when it ran, leaving only the CPU loops to the caller).
struct PoolStep {
  WindowGeometry g;
  Tensor result;
  bool done = false;
};

PoolStep pool_forward(const Layer& layer, const Pool2dOptions& options, cuda_kernels::PoolMode mode,
                      const Tensor& x, Context& ctx) {
  check_nchw(layer, x);
  PoolStep step{pool_geometry(options, x.shape()), Tensor()};
  MemoryCategoryScope scope(MemoryCategory::activations);
  step.result = Tensor::empty(pooled_shape(x.shape(), step.g), x.dtype(), x.device());
  ctx.save_shape("input", x.shape());
  if (x.device().is_cuda()) {
    cuda_kernels::pool2d_forward(mode, step.g, x, step.result);
    ctx.save("input", x);
    ctx.save("output", step.result);
    step.done = true;
  }
  return step;
}

PoolStep pool_backward(const Layer& layer, const Pool2dOptions& options, cuda_kernels::PoolMode mode,
                       const Tensor& grad_y, Context& ctx) {
  const Shape input_shape = ctx.get_shape("input");
  PoolStep step{pool_geometry(options, input_shape), Tensor()};
  detail::check_same_shape(layer, "output gradient", grad_y, pooled_shape(input_shape, step.g));
  step.result = Tensor::zeros(input_shape, grad_y.dtype(), grad_y.device());
  if (grad_y.device().is_cuda()) {
    cuda_kernels::pool2d_backward(mode, step.g, ctx.get("input"), ctx.get("output"), grad_y, step.result);
    step.done = true;
  }
  return step;
}
}  // namespace

// ---- Pool2d ----------------------------------------------------------------------------------

WindowGeometry Pool2d::geometry(const Shape& input) const { return pool_geometry(options_, input); }

std::vector<Shape> Pool2d::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1 && input_shapes[0].rank() == 4, type(), ": expected one [N, C, H, W] shape");
  return {pooled_shape(input_shapes[0], geometry(input_shapes[0]))};
}

double Pool2d::flops(const std::vector<Shape>& input_shapes) const {
  return static_cast<double>(output_shapes(input_shapes)[0].numel() * options_.kernel.h * options_.kernel.w);
}

// ---- MaxPool2d -------------------------------------------------------------------------------

MaxPool2d::MaxPool2d(const Pool2dOptions& options) : Pool2d(options) { check_pool_options("MaxPool2d", options_); }

Tensor MaxPool2d::forward_tensor(const Tensor& x, Context& ctx) {
  PoolStep step = pool_forward(*this, options_, cuda_kernels::PoolMode::max, x, ctx);
  if (step.done) return step.result;
  Tensor argmax;
  {
    MemoryCategoryScope scope(MemoryCategory::activations);
    argmax = Tensor::empty(step.result.shape(), DType::i32);
  }
  dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
    split_planes(step.g, x.size(0) * x.size(1), [&](std::int64_t first, std::int64_t last) {
      max_pool_forward<T>(step.g, first, last, x.data<T>(), step.result.data<T>(), argmax.data<std::int32_t>());
    });
  });
  ctx.save("argmax", argmax);
  return step.result;
}

Tensor MaxPool2d::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  PoolStep step = pool_backward(*this, options_, cuda_kernels::PoolMode::max, grad_y, ctx);
  if (!step.done) {
    const Tensor argmax = ctx.get("argmax");
    dispatch_floating(grad_y.dtype(), describe(), [&]<typename T>(T) {
      split_planes(step.g, step.result.size(0) * step.result.size(1), [&](std::int64_t first, std::int64_t last) {
        max_pool_backward<T>(step.g, first, last, grad_y.data<T>(), argmax.data<std::int32_t>(), step.result.data<T>());
      });
    });
  }
  ctx.clear();
  return step.result;
}

std::size_t MaxPool2d::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return detail::f32_bytes(output_shapes(input_shapes)[0]);  // i32 argmax per output
}

// ---- AvgPool2d -------------------------------------------------------------------------------

AvgPool2d::AvgPool2d(const Pool2dOptions& options) : Pool2d(options) { check_pool_options("AvgPool2d", options_); }

Tensor AvgPool2d::forward_tensor(const Tensor& x, Context& ctx) {
  PoolStep step = pool_forward(*this, options_, average_mode(options_), x, ctx);
  if (step.done) return step.result;
  dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
    split_planes(step.g, x.size(0) * x.size(1), [&](std::int64_t first, std::int64_t last) {
      avg_pool<T, false>(step.g, options_.count_include_pad, first, last, x.data<T>(), step.result.data<T>(), nullptr,
                         nullptr);
    });
  });
  return step.result;
}

Tensor AvgPool2d::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  PoolStep step = pool_backward(*this, options_, average_mode(options_), grad_y, ctx);
  if (!step.done) {
    dispatch_floating(grad_y.dtype(), describe(), [&]<typename T>(T) {
      split_planes(step.g, step.result.size(0) * step.result.size(1), [&](std::int64_t first, std::int64_t last) {
        avg_pool<T, true>(step.g, options_.count_include_pad, first, last, nullptr, nullptr, grad_y.data<T>(),
                          step.result.data<T>());
      });
    });
  }
  ctx.clear();
  return step.result;
}

std::size_t AvgPool2d::activation_bytes(const std::vector<Shape>& input_shapes) const {
  output_shapes(input_shapes);
  return 0;  // only the input shape (CUDA keeps cuDNN's input and output)
}

// ---- GlobalAvgPool2d -------------------------------------------------------------------------

Tensor GlobalAvgPool2d::forward_tensor(const Tensor& x, Context& ctx) {
  check_nchw(*this, x);
  MemoryCategoryScope scope(MemoryCategory::activations);
  ctx.save_shape("input", x.shape());
  const Tensor planes = x.reshape({x.size(0) * x.size(1), x.size(2) * x.size(3)});
  return ops::mean(planes, 1).reshape({x.size(0), x.size(1)});
}

Tensor GlobalAvgPool2d::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  const Shape input_shape = ctx.get_shape("input");
  detail::check_same_shape(*this, "output gradient", grad_y, {input_shape[0], input_shape[1]});
  const std::int64_t plane = input_shape[2] * input_shape[3];
  // grad_x[n, c, :] = grad_y[n, c] / plane, as the outer product grad_y (column) x ones (row).
  Tensor grad_x = Tensor::empty(input_shape, grad_y.dtype(), grad_y.device());
  Tensor ones;
  {
    MemoryCategoryScope scope(MemoryCategory::workspace);
    ones = Tensor::full({1, plane}, 1.0, grad_y.dtype(), grad_y.device());
  }
  Tensor grad_matrix = grad_x.reshape({input_shape[0] * input_shape[1], plane});
  ops::gemm(grad_y.reshape({input_shape[0] * input_shape[1], 1}), false, ones, false, grad_matrix,
            1.0 / static_cast<double>(plane));
  ctx.clear();
  return grad_x;
}

std::vector<Shape> GlobalAvgPool2d::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1 && input_shapes[0].rank() == 4,
             "GlobalAvgPool2d: expected one [N, C, H, W] shape");
  return {Shape{input_shapes[0][0], input_shapes[0][1]}};
}

double GlobalAvgPool2d::flops(const std::vector<Shape>& input_shapes) const {
  return static_cast<double>(input_shapes.at(0).numel());
}

std::size_t GlobalAvgPool2d::activation_bytes(const std::vector<Shape>& input_shapes) const {
  output_shapes(input_shapes);
  return 0;
}

}  // namespace loom
