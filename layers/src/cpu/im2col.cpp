// CPU im2col / col2im (see im2col.h). Each (channel, tap, output row) is one run over the output
// columns; the valid range of a run is computed once so the inner loop has no bounds checks.
#include "cpu/im2col.h"

#include <algorithm>
#include <cstring>

namespace loom::detail {
namespace {

// Output columns [lo, hi) whose input column ow*stride + first lies inside [0, width).
struct ValidRange {
  std::int64_t lo, hi;
};

ValidRange valid_columns(std::int64_t first, std::int64_t stride, std::int64_t width, std::int64_t out_width) {
  const std::int64_t lo = first >= 0 ? 0 : (-first + stride - 1) / stride;
  const std::int64_t hi = width - 1 - first < 0 ? 0 : std::min(out_width, (width - 1 - first) / stride + 1);
  return {std::min(lo, hi), hi};
}

}  // namespace

template <typename T>
void im2col(const T* image, std::int64_t channels, const WindowGeometry& g, T* col, std::int64_t row_stride) {
  const std::int64_t sh = g.stride.h, sw = g.stride.w;
  for (std::int64_t c = 0; c < channels; ++c) {
    const T* plane = image + c * g.plane();
    for (std::int64_t ki = 0; ki < g.kernel.h; ++ki) {
      for (std::int64_t kj = 0; kj < g.kernel.w; ++kj) {
        T* row = col + ((c * g.kernel.h + ki) * g.kernel.w + kj) * row_stride;
        const std::int64_t first_w = kj * g.dilation.w - g.padding.w;
        const ValidRange valid = valid_columns(first_w, sw, g.width, g.out_width);
        for (std::int64_t oh = 0; oh < g.out_height; ++oh) {
          T* out = row + oh * g.out_width;
          const std::int64_t ih = oh * sh - g.padding.h + ki * g.dilation.h;
          if (ih < 0 || ih >= g.height) {
            std::fill(out, out + g.out_width, T(0));
            continue;
          }
          const T* in = plane + ih * g.width;
          std::fill(out, out + valid.lo, T(0));
          if (sw == 1) {
            std::memcpy(out + valid.lo, in + (first_w + valid.lo), sizeof(T) * (valid.hi - valid.lo));
          } else {
            for (std::int64_t ow = valid.lo; ow < valid.hi; ++ow) out[ow] = in[first_w + ow * sw];
          }
          std::fill(out + valid.hi, out + g.out_width, T(0));
        }
      }
    }
  }
}

template <typename T>
void col2im(const T* col, std::int64_t row_stride, std::int64_t channels, const WindowGeometry& g, T* image) {
  const std::int64_t sh = g.stride.h, sw = g.stride.w;
  for (std::int64_t c = 0; c < channels; ++c) {
    T* plane = image + c * g.plane();
    for (std::int64_t ki = 0; ki < g.kernel.h; ++ki) {
      for (std::int64_t kj = 0; kj < g.kernel.w; ++kj) {
        const T* row = col + ((c * g.kernel.h + ki) * g.kernel.w + kj) * row_stride;
        const std::int64_t first_w = kj * g.dilation.w - g.padding.w;
        const ValidRange valid = valid_columns(first_w, sw, g.width, g.out_width);
        for (std::int64_t oh = 0; oh < g.out_height; ++oh) {
          const std::int64_t ih = oh * sh - g.padding.h + ki * g.dilation.h;
          if (ih < 0 || ih >= g.height) continue;
          const T* in = row + oh * g.out_width;
          T* out = plane + ih * g.width;
          for (std::int64_t ow = valid.lo; ow < valid.hi; ++ow) out[first_w + ow * sw] += in[ow];
        }
      }
    }
  }
}

template void im2col<float>(const float*, std::int64_t, const WindowGeometry&, float*, std::int64_t);
template void im2col<double>(const double*, std::int64_t, const WindowGeometry&, double*, std::int64_t);
template void col2im<float>(const float*, std::int64_t, std::int64_t, const WindowGeometry&, float*);
template void col2im<double>(const double*, std::int64_t, std::int64_t, const WindowGeometry&, double*);

}  // namespace loom::detail
