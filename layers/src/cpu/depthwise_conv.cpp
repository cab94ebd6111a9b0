// Depthwise convolution CPU kernels (see depthwise_conv.h). One helper walks the taps of a plane:
// for output row oh and tap (kh, kw) it yields the input row and the output columns whose input
// column ow * stride + offset lies inside the plane; forward, input gradient and weight gradient
// are that walk with three different inner loops.
#include "depthwise_conv.h"

#include <algorithm>

#include <loom/core/dtype_dispatch.h>
#include <loom/core/parallel.h>

namespace loom::detail::depthwise {

namespace {

// Calls row(oh, ih, tap, ow_begin, ow_end, offset) for every output row and every tap whose
// input row ih is inside the plane; input column of output column ow is ow * stride.w + offset.
template <typename Row>
void for_each_tap(const WindowGeometry& g, Row&& row) {
  for (std::int64_t oh = 0; oh < g.out_height; ++oh)
    for (std::int64_t kh = 0; kh < g.kernel.h; ++kh) {
      const std::int64_t ih = oh * g.stride.h - g.padding.h + kh * g.dilation.h;
      if (ih < 0 || ih >= g.height) continue;
      for (std::int64_t kw = 0; kw < g.kernel.w; ++kw) {
        const std::int64_t offset = kw * g.dilation.w - g.padding.w;  // iw = ow * stride + offset
        const std::int64_t begin = offset >= 0 ? 0 : (-offset + g.stride.w - 1) / g.stride.w;
        const std::int64_t last = g.width - 1 - offset;  // largest ow * stride allowed
        const std::int64_t end = last < 0 ? 0 : std::min(g.out_width, last / g.stride.w + 1);
        if (begin < end) row(oh, ih, kh * g.kernel.w + kw, begin, end, offset);
      }
    }
}

template <typename T>
void forward_plane(const T* x, const T* w, T bias, const WindowGeometry& g, T* y) {
  std::fill(y, y + g.out_plane(), bias);
  const std::int64_t stride = g.stride.w;
  for_each_tap(g, [&](std::int64_t oh, std::int64_t ih, std::int64_t tap, std::int64_t begin, std::int64_t end,
                      std::int64_t offset) {
    const T weight = w[tap];
    const T* in = x + ih * g.width;
    T* out = y + oh * g.out_width;
    if (stride == 1)
      for (std::int64_t ow = begin; ow < end; ++ow) out[ow] += weight * in[ow + offset];
    else
      for (std::int64_t ow = begin; ow < end; ++ow) out[ow] += weight * in[ow * stride + offset];
  });
}

template <typename T>
void input_gradient_plane(const T* gy, const T* w, const WindowGeometry& g, T* gx) {
  std::fill(gx, gx + g.plane(), T(0));
  const std::int64_t stride = g.stride.w;
  for_each_tap(g, [&](std::int64_t oh, std::int64_t ih, std::int64_t tap, std::int64_t begin, std::int64_t end,
                      std::int64_t offset) {
    const T weight = w[tap];
    T* in = gx + ih * g.width;
    const T* out = gy + oh * g.out_width;
    if (stride == 1)
      for (std::int64_t ow = begin; ow < end; ++ow) in[ow + offset] += weight * out[ow];
    else
      for (std::int64_t ow = begin; ow < end; ++ow) in[ow * stride + offset] += weight * out[ow];
  });
}

// Adds this plane's contribution to the channel's tap sums.
template <typename T>
void weight_gradient_plane(const T* x, const T* gy, const WindowGeometry& g, T* taps) {
  const std::int64_t stride = g.stride.w;
  for_each_tap(g, [&](std::int64_t oh, std::int64_t ih, std::int64_t tap, std::int64_t begin, std::int64_t end,
                      std::int64_t offset) {
    const T* in = x + ih * g.width;
    const T* out = gy + oh * g.out_width;
    // Eight independent partial sums: a float sum the compiler may vectorise without reordering.
    T lanes[8] = {};
    std::int64_t ow = begin;
    if (stride == 1)
      for (; ow + 8 <= end; ow += 8)
        for (int j = 0; j < 8; ++j) lanes[j] += out[ow + j] * in[ow + j + offset];
    T sum = 0;
    for (; ow < end; ++ow) sum += out[ow] * in[ow * stride + offset];
    for (const T lane : lanes) sum += lane;
    taps[tap] += sum;
  });
}

}  // namespace

void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const WindowGeometry& g, Tensor& y) {
  const std::int64_t channels = x.size(1), planes = x.size(0) * channels, taps = g.window();
  dispatch_floating(x.dtype(), "depthwise convolution", [&]<typename T>(T) {
    const T* xs = x.data<T>();
    const T* ws = weight.data<T>();
    const T* bs = bias.defined() ? bias.data<T>() : nullptr;
    T* ys = y.data<T>();
    parallel_for(planes, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t p = begin; p < end; ++p) {
        const std::int64_t c = p % channels;
        forward_plane<T>(xs + p * g.plane(), ws + c * taps, bs ? bs[c] : T(0), g, ys + p * g.out_plane());
      }
    });
  });
}

void input_gradient(const Tensor& grad_y, const Tensor& weight, const WindowGeometry& g, Tensor& grad_x) {
  const std::int64_t channels = grad_y.size(1), planes = grad_y.size(0) * channels, taps = g.window();
  dispatch_floating(grad_y.dtype(), "depthwise convolution", [&]<typename T>(T) {
    const T* gys = grad_y.data<T>();
    const T* ws = weight.data<T>();
    T* gxs = grad_x.data<T>();
    parallel_for(planes, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t p = begin; p < end; ++p)
        input_gradient_plane<T>(gys + p * g.out_plane(), ws + (p % channels) * taps, g, gxs + p * g.plane());
    });
  });
}

void accumulate_weight_gradient(const Tensor& x, const Tensor& grad_y, const WindowGeometry& g, Tensor& grad_weight,
                                Tensor& grad_bias) {
  const std::int64_t batch = x.size(0), channels = x.size(1), taps = g.window();
  dispatch_floating(x.dtype(), "depthwise convolution", [&]<typename T>(T) {
    const T* xs = x.data<T>();
    const T* gys = grad_y.data<T>();
    T* gw = grad_weight.data<T>();
    T* gb = grad_bias.defined() ? grad_bias.data<T>() : nullptr;
    parallel_for(channels, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t c = begin; c < end; ++c)
        for (std::int64_t n = 0; n < batch; ++n) {
          const std::int64_t p = n * channels + c;
          weight_gradient_plane<T>(xs + p * g.plane(), gys + p * g.out_plane(), g, gw + c * taps);
          if (gb) {
            const T* out = gys + p * g.out_plane();
            T sum = 0;
            for (std::int64_t i = 0; i < g.out_plane(); ++i) sum += out[i];
            gb[c] += sum;
          }
        }
    });
  });
}

}  // namespace loom::detail::depthwise
