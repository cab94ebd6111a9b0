// Conv2d forward/backward (see conv2d.h): on the CPU, the path cpu/conv_path.h chooses (oneDNN,
// Winograd, or im2col + GEMM here); cuDNN in cuda/conv2d.cpp.
#include <loom/layers/conv2d.h>

#include <algorithm>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/parallel.h>

#include "cpu/blocked_layout.h"
#include "cpu/conv_path.h"
#include "cpu/im2col.h"
#include "cpu/onednn_conv.h"
#include "cpu/winograd.h"
#include "cuda/conv2d.h"
#include "gemm_operand_storage.h"
#include "layer_util.h"
#include "strided_copy.h"

namespace loom {

namespace {

// Column matrices aim at this many columns per GEMM (BLAS is efficient well before that) and
// stay under this many bytes.
constexpr std::int64_t kTargetColumns = 1024;
constexpr std::int64_t kMaxColumnBytes = std::int64_t{32} << 20;

std::int64_t images_per_chunk(std::int64_t batch, std::int64_t rows, std::int64_t out_plane, std::size_t element) {
  const std::int64_t wanted = (kTargetColumns + out_plane - 1) / std::max<std::int64_t>(out_plane, 1);
  const std::int64_t affordable =
      kMaxColumnBytes / std::max<std::int64_t>(rows * out_plane * static_cast<std::int64_t>(element), 1);
  return std::clamp<std::int64_t>(std::min(wanted, affordable), 1, std::max<std::int64_t>(batch, 1));
}

// im2col of images [first, first + count) of x into one column matrix (row length `cols`),
// spread over threads by (image, channel): each writes its own rows and columns.
template <typename T>
void columns_from_images(const T* x, std::int64_t first, std::int64_t count, std::int64_t channels, const WindowGeometry& g, T* col,
           std::int64_t cols) {
  const std::int64_t taps = g.window(), out_plane = g.out_plane();
  parallel_for(count * channels, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t ic = begin; ic < end; ++ic) {
      const std::int64_t i = ic / channels, c = ic % channels;
      detail::im2col(x + ((first + i) * channels + c) * g.plane(), 1, g, col + c * taps * cols + i * out_plane, cols);
    }
  });
}

// col2im of a column matrix back onto images [first, first + count) of grad_x (accumulating);
// each (image, channel) plane is written by one thread.
template <typename T>
void images_from_columns(const T* col, std::int64_t cols, std::int64_t first, std::int64_t count, std::int64_t channels,
           const WindowGeometry& g, T* grad_x) {
  const std::int64_t taps = g.window(), out_plane = g.out_plane();
  parallel_for(count * channels, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t ic = begin; ic < end; ++ic) {
      const std::int64_t i = ic / channels, c = ic % channels;
      detail::col2im(col + c * taps * cols + i * out_plane, cols, 1, g, grad_x + ((first + i) * channels + c) * g.plane());
    }
  });
}

// A 1x1 convolution with unit stride and no padding: the input plane is its own column matrix.
bool is_pointwise(const Conv2dOptions& o) {
  return o.kernel == Size2(1) && o.stride == Size2(1) && o.padding == Size2(0);
}

// Rows [begin, end) of a 2-D matrix (a view).
Tensor rows_of(const Tensor& matrix, std::int64_t begin, std::int64_t end) { return matrix.slice(begin, end); }

// The first rows*cols elements of a flat buffer as a [rows, cols] matrix.
Tensor as_matrix(const Tensor& flat, std::int64_t rows, std::int64_t cols) {
  return flat.slice(0, rows * cols).reshape({rows, cols});
}

// Image n of an [N, C, H, W] tensor as a [C, H*W] matrix (a view).
Tensor image_matrix(const Tensor& x, std::int64_t n) {
  return x.slice(n, n + 1).reshape({x.size(1), x.size(2) * x.size(3)});
}

// dY of images [first, first + count) as one [O, count * P] matrix: a view for one image, a
// gathered copy into `buffer` otherwise.
Tensor gather_output_rows(const Tensor& grad_y, std::int64_t first, std::int64_t count, const Tensor& buffer) {
  if (count == 1) return image_matrix(grad_y, first);
  const std::int64_t channels = grad_y.size(1), plane = grad_y.size(2) * grad_y.size(3);
  Tensor matrix = as_matrix(buffer, channels, count * plane);
  for (std::int64_t i = 0; i < count; ++i)
    detail::copy_rows(grad_y, (first + i) * channels * plane, plane, matrix, i * plane, count * plane, channels, plane);
  return matrix;
}

// The im2col + GEMM lowering of one call over a batch, shared by forward, the input gradient and
// the weight gradient: column-matrix rows (all groups) and their split per group, images per GEMM
// chunk, and the chunk's scratch buffers: the columns (none when a pointwise convolution of one
// image reads the image itself) and, when several images share a GEMM, a staging matrix of the
// output channels (the chunk's outputs, or its gathered dY).
struct Lowering {
  std::int64_t rows, group_rows, group_out, chunk;
  bool pointwise;
  Tensor columns, staging;

  // The [rows, count * out_plane] column matrix of images [first, first + count) of x: the image
  // itself for a pointwise convolution of one image, else its im2col in `columns`.
  template <typename T>
  Tensor columns_of(const Tensor& x, std::int64_t first, std::int64_t count, const WindowGeometry& g) const;
};

Lowering lower(const Conv2dOptions& o, const WindowGeometry& g, std::int64_t batch, DType dtype) {
  Lowering l;
  const std::int64_t out_plane = g.out_plane();
  l.rows = o.in_channels * g.window();
  l.group_rows = l.rows / o.groups;
  l.group_out = o.out_channels / o.groups;
  l.chunk = images_per_chunk(batch, l.rows, out_plane, dtype_size(dtype));
  l.pointwise = is_pointwise(o);
  if (!(l.pointwise && l.chunk == 1)) l.columns = Tensor::empty({l.rows * l.chunk * out_plane}, dtype);
  if (l.chunk > 1) l.staging = Tensor::empty({o.out_channels * l.chunk * out_plane}, dtype);
  return l;
}

template <typename T>
Tensor Lowering::columns_of(const Tensor& x, std::int64_t first, std::int64_t count, const WindowGeometry& g) const {
  if (pointwise && count == 1) return image_matrix(x, first);
  const std::int64_t cols = count * g.out_plane();
  Tensor col = as_matrix(columns, rows, cols);
  columns_from_images(x.data<T>(), first, count, x.size(1), g, col.data<T>(), cols);
  return col;
}

template <typename T>
void add_channel_bias(Tensor& y, const Tensor& bias) {
  const std::int64_t batch = y.size(0), channels = y.size(1), plane = y.size(2) * y.size(3);
  T* data = y.data<T>();
  const T* b = bias.data<T>();
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t c = 0; c < channels; ++c) {
      T* p = data + (n * channels + c) * plane;
      for (std::int64_t i = 0; i < plane; ++i) p[i] += b[c];
    }
}

template <typename T>
void accumulate_channel_sums(const Tensor& grad_y, Tensor& grad_bias) {
  const std::int64_t batch = grad_y.size(0), channels = grad_y.size(1), plane = grad_y.size(2) * grad_y.size(3);
  const T* g = grad_y.data<T>();
  T* out = grad_bias.data<T>();
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (std::int64_t n = 0; n < batch; ++n) {
      const T* p = g + (n * channels + c) * plane;
      for (std::int64_t i = 0; i < plane; ++i) sum += p[i];
    }
    out[c] += static_cast<T>(sum);
  }
}

// A blocked tensor (blocked_layout.h) only goes through oneDNN's path.
void check_blocked_path(const Layer& layer, detail::ConvPath path, const Tensor& a, const Tensor& b = Tensor()) {
  const bool blocked = detail::blocked::is_blocked(a) || (b.defined() && detail::blocked::is_blocked(b));
  LOOM_CHECK(!blocked || path == detail::ConvPath::onednn, layer.describe(),
             ": a blocked input or gradient needs the oneDNN path");
}

// The input as the backward needs it: in the GEMMs' 16-bit operand type where the CPU path's weight
// gradient rounds it to that anyway (gemm_operand_storage.h: the same numbers in half the bytes),
// else as it is (cuDNN and Winograd compute in f32 under mixed precision).
Tensor input_to_save(const Conv2dOptions& o, const Tensor& x) {
  if (x.device().is_cuda() || !detail::conv_path_rounds_input(detail::choose_conv_path(o, x.dtype()))) return x;
  return detail::as_gemm_operand(x);
}

}  // namespace

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
  const auto& o = options_;
  LOOM_CHECK(o.in_channels > 0 && o.out_channels > 0, "Conv2d: channels must be positive, got in ", o.in_channels,
             ", out ", o.out_channels);
  LOOM_CHECK(o.groups > 0 && o.in_channels % o.groups == 0 && o.out_channels % o.groups == 0, "Conv2d: groups ",
             o.groups, " must divide in_channels ", o.in_channels, " and out_channels ", o.out_channels);
  LOOM_CHECK(o.kernel.h > 0 && o.kernel.w > 0 && o.stride.h > 0 && o.stride.w > 0 && o.dilation.h > 0 &&
                 o.dilation.w > 0 && o.padding.h >= 0 && o.padding.w >= 0,
             "Conv2d: kernel, stride and dilation must be positive and padding non-negative");
  const std::int64_t fan_in = o.in_channels / o.groups * o.kernel.h * o.kernel.w;
  weight_ = make_parameter("weight", {o.out_channels, o.in_channels / o.groups, o.kernel.h, o.kernel.w},
                           Init::fan_in_uniform(fan_in));
  if (o.bias) bias_ = make_parameter("bias", {o.out_channels}, Init::fan_in_uniform(fan_in));
}

std::string Conv2d::cpu_path(DType dtype) const { return detail::conv_path_name(detail::choose_conv_path(options_, dtype)); }

std::vector<Parameter*> Conv2d::local_parameters() {
  if (options_.bias) return {&weight_, &bias_};
  return {&weight_};
}

WindowGeometry Conv2d::geometry(const Shape& input) const {
  return {input[2], input[3], options_.kernel, options_.stride, options_.padding, options_.dilation};
}

void Conv2d::check_input(const Tensor& x) const {
  const Shape s = detail::blocked::logical_shape(x.shape());
  LOOM_CHECK(s.rank() == 4 && s[1] == options_.in_channels, describe(), ": input shape ", x.shape().str(),
             " does not match weight shape ", weight_.value.shape().str(), " (expected [N, ", options_.in_channels,
             ", H, W])");
  detail::check_like(*this, "input", x, weight_.value, "weight");
}

Tensor Conv2d::forward_tensor(const Tensor& x, Context& ctx) {
  check_input(x);
  const bool blocked = detail::blocked::is_blocked(x);  // nChw16c in and out (blocked_layout.h)
  const WindowGeometry g = geometry(x.shape());
  const auto& o = options_;
  const std::int64_t batch = x.size(0), out_plane = g.out_plane();
  Tensor y;
  {
    MemoryCategoryScope scope(MemoryCategory::activations);
    const Shape out{batch, o.out_channels, g.out_height, g.out_width};
    y = Tensor::empty(blocked ? detail::blocked::blocked_shape(out) : out, x.dtype(), x.device());
    ctx.save("input", input_to_save(o, x));
  }
  if (x.device().is_cuda()) {
    cuda_kernels::conv2d_forward(x, weight_.value, bias_.value, y, o);
    return y;
  }

  MemoryCategoryScope scope(MemoryCategory::workspace);
  const detail::ConvPath path = detail::choose_conv_path(o, x.dtype());
  check_blocked_path(*this, path, x);
  if (path == detail::ConvPath::onednn) {
    detail::onednn::convolve(x, weight_.value, bias_.value, y, o);
    return y;
  }
  if (path == detail::ConvPath::winograd) {
    detail::winograd::convolve(x, detail::winograd::transform_filter(weight_.value, false), o.padding.h, bias_.value, y);
    return y;
  }
  const Lowering l = lower(o, g, batch, x.dtype());
  const Tensor weights = weight_.value.reshape({o.out_channels, l.group_rows});

  dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
    for (std::int64_t first = 0; first < batch; first += l.chunk) {
      const std::int64_t count = std::min(l.chunk, batch - first), cols = count * out_plane;
      const Tensor col = l.columns_of<T>(x, first, count, g);
      Tensor out = count == 1 ? image_matrix(y, first) : as_matrix(l.staging, o.out_channels, cols);
      for (std::int64_t grp = 0; grp < o.groups; ++grp) {
        Tensor out_rows = rows_of(out, grp * l.group_out, (grp + 1) * l.group_out);
        ops::gemm(rows_of(weights, grp * l.group_out, (grp + 1) * l.group_out), false,
                  rows_of(col, grp * l.group_rows, (grp + 1) * l.group_rows), false, out_rows);
      }
      if (count > 1)
        for (std::int64_t i = 0; i < count; ++i)
          detail::copy_rows(out, i * out_plane, cols, y, (first + i) * o.out_channels * out_plane, out_plane,
                            o.out_channels, out_plane);
    }
    if (o.bias) add_channel_bias<T>(y, bias_.value);
  });
  return y;
}

Tensor Conv2d::input_gradient(const Shape& input_shape, const Tensor& grad_y) const {
  const auto& o = options_;
  const WindowGeometry g = geometry(input_shape);
  const std::int64_t batch = input_shape[0], out_plane = g.out_plane();
  if (grad_y.device().is_cuda()) {
    Tensor grad_x = Tensor::empty(input_shape, grad_y.dtype(), grad_y.device());
    cuda_kernels::conv2d_backward_data(grad_y, weight_.value, grad_x, o);
    return grad_x;
  }
  const detail::ConvPath path = detail::choose_conv_path(o, grad_y.dtype());
  check_blocked_path(*this, path, grad_y);
  if (path == detail::ConvPath::onednn) {
    Tensor grad_x = Tensor::empty(input_shape, grad_y.dtype(), grad_y.device());
    MemoryCategoryScope scope(MemoryCategory::workspace);
    detail::onednn::input_gradient(grad_y, weight_.value, grad_x, o);
    return grad_x;
  }
  if (path == detail::ConvPath::winograd) {  // the forward of the rotated, transposed filter with padding 2 - p
    Tensor grad_x = Tensor::empty(input_shape, grad_y.dtype(), grad_y.device());
    MemoryCategoryScope scope(MemoryCategory::workspace);
    detail::winograd::convolve(grad_y, detail::winograd::transform_filter(weight_.value, true), 2 - o.padding.h,
                               Tensor(), grad_x);
    return grad_x;
  }
  Tensor grad_x = Tensor::zeros(input_shape, grad_y.dtype(), grad_y.device());  // col2im accumulates

  MemoryCategoryScope scope(MemoryCategory::workspace);
  const Lowering l = lower(o, g, batch, grad_y.dtype());
  const Tensor weights = weight_.value.reshape({o.out_channels, l.group_rows});

  dispatch_floating(grad_y.dtype(), describe(), [&]<typename T>(T) {
    for (std::int64_t first = 0; first < batch; first += l.chunk) {
      const std::int64_t count = std::min(l.chunk, batch - first), cols = count * out_plane;
      const Tensor dy = gather_output_rows(grad_y, first, count, l.staging);
      const bool direct = l.pointwise && count == 1;
      Tensor col = direct ? image_matrix(grad_x, first) : as_matrix(l.columns, l.rows, cols);
      for (std::int64_t grp = 0; grp < o.groups; ++grp) {
        Tensor col_rows = rows_of(col, grp * l.group_rows, (grp + 1) * l.group_rows);
        ops::gemm(rows_of(weights, grp * l.group_out, (grp + 1) * l.group_out), true,
                  rows_of(dy, grp * l.group_out, (grp + 1) * l.group_out), false, col_rows);
      }
      if (direct) continue;
      images_from_columns(col.data<T>(), cols, first, count, o.in_channels, g, grad_x.data<T>());
    }
  });
  return grad_x;
}

void Conv2d::accumulate_weight_gradient(const Tensor& x, const Tensor& grad_y) {
  const auto& o = options_;
  if (x.device().is_cuda()) {
    cuda_kernels::conv2d_backward_filter(x, grad_y, weight_.grad, bias_.grad, o);
    return;
  }
  const WindowGeometry g = geometry(x.shape());
  const std::int64_t batch = x.size(0);
  MemoryCategoryScope scope(MemoryCategory::workspace);
  const detail::ConvPath path = detail::choose_conv_path(o, x.dtype());
  check_blocked_path(*this, path, x, grad_y);
  if (path == detail::ConvPath::onednn) {
    detail::onednn::accumulate_weight_gradient(x, grad_y, weight_.grad, bias_.grad, o);
    return;
  }
  if (path == detail::ConvPath::winograd) {
    detail::winograd::accumulate_filter_gradient(x, grad_y, o.padding.h, weight_.grad);
    if (o.bias)
      dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) { accumulate_channel_sums<T>(grad_y, bias_.grad); });
    return;
  }
  const Lowering l = lower(o, g, batch, x.dtype());
  Tensor grad_weights = weight_.grad.reshape({o.out_channels, l.group_rows});

  dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
    for (std::int64_t first = 0; first < batch; first += l.chunk) {
      const std::int64_t count = std::min(l.chunk, batch - first);
      const Tensor dy = gather_output_rows(grad_y, first, count, l.staging);
      const Tensor col = l.columns_of<T>(x, first, count, g);
      for (std::int64_t grp = 0; grp < o.groups; ++grp) {
        Tensor grad_rows = rows_of(grad_weights, grp * l.group_out, (grp + 1) * l.group_out);
        ops::gemm(rows_of(dy, grp * l.group_out, (grp + 1) * l.group_out), false,
                  rows_of(col, grp * l.group_rows, (grp + 1) * l.group_rows), true, grad_rows, 1.0, 1.0);
      }
    }
    if (o.bias) accumulate_channel_sums<T>(grad_y, bias_.grad);
  });
}

Tensor Conv2d::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  // The input gradient takes the output gradient's layout (blocked_layout.h), whatever the input's.
  const Tensor x = ctx.get("input");
  const Shape input_shape = detail::blocked::logical_shape(x.shape());
  const WindowGeometry g = geometry(input_shape);
  const Shape out{input_shape[0], options_.out_channels, g.out_height, g.out_width};
  const bool blocked = detail::blocked::is_blocked(grad_y);
  detail::check_same_shape(*this, "output gradient", grad_y, blocked ? detail::blocked::blocked_shape(out) : out);
  detail::check_like(*this, "output gradient", grad_y, weight_.value, "weight");
  ctx.save("grad_output", grad_y);
  return input_gradient(blocked ? detail::blocked::blocked_shape(input_shape) : input_shape, grad_y);
}

void Conv2d::backward_weight(Context& ctx) {
  accumulate_weight_gradient(detail::widened_gemm_operand(ctx.get("input")), ctx.get("grad_output"));
  ctx.clear();
}

std::vector<Shape> Conv2d::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1 && input_shapes[0].rank() == 4 && input_shapes[0][1] == options_.in_channels,
             "Conv2d: expected one input shape [N, ", options_.in_channels, ", H, W]");
  const WindowGeometry g = geometry(input_shapes[0]);
  return {Shape{input_shapes[0][0], options_.out_channels, g.out_height, g.out_width}};
}

double Conv2d::flops(const std::vector<Shape>& input_shapes) const {
  const Shape out = output_shapes(input_shapes)[0];
  const double macs_per_output =
      static_cast<double>(options_.in_channels / options_.groups * options_.kernel.h * options_.kernel.w);
  return 2.0 * static_cast<double>(out.numel()) * macs_per_output;
}

std::size_t Conv2d::activation_bytes(const std::vector<Shape>& input_shapes) const {
  output_shapes(input_shapes);  // validates
  return detail::f32_bytes(input_shapes[0]);
}

}  // namespace loom
