// Sliding-window geometry shared by Conv2d and the 2-D pooling layers: a (height, width) pair and
// the output size of a window of `kernel` sliding with `stride` over a zero-padded input, as
// torch.nn.Conv2d / MaxPool2d compute it (floor mode).
#pragma once

#include <cstdint>

#include <loom/base/error.h>

namespace loom {

// (height, width); a single number means both, so `kernel = 3` and `kernel = {3, 1}` both read well.
struct Size2 {
  std::int64_t h = 1;
  std::int64_t w = 1;
  Size2() = default;
  Size2(std::int64_t both) : h(both), w(both) {}  // NOLINT: implicit on purpose
  Size2(std::int64_t height, std::int64_t width) : h(height), w(width) {}
  friend bool operator==(const Size2&, const Size2&) = default;
};

// Output length of one spatial dimension; throws when the window does not fit.
inline std::int64_t window_output_size(std::int64_t input, std::int64_t kernel, std::int64_t stride,
                                       std::int64_t padding, std::int64_t dilation = 1) {
  const std::int64_t span = dilation * (kernel - 1) + 1;
  LOOM_CHECK(input + 2 * padding >= span, "window of extent ", span, " (kernel ", kernel, ", dilation ",
             dilation, ") does not fit an input of size ", input, " with padding ", padding);
  return (input + 2 * padding - span) / stride + 1;
}

// Everything a 2-D window kernel needs about one call: sizes of the input planes, the window and
// the output planes.
struct WindowGeometry {
  std::int64_t height = 0, width = 0;  // input plane
  Size2 kernel, stride, padding, dilation;
  std::int64_t out_height = 0, out_width = 0;

  WindowGeometry() = default;
  WindowGeometry(std::int64_t height_, std::int64_t width_, Size2 kernel_, Size2 stride_, Size2 padding_,
                 Size2 dilation_ = 1)
      : height(height_), width(width_), kernel(kernel_), stride(stride_), padding(padding_), dilation(dilation_),
        out_height(window_output_size(height_, kernel_.h, stride_.h, padding_.h, dilation_.h)),
        out_width(window_output_size(width_, kernel_.w, stride_.w, padding_.w, dilation_.w)) {}

  std::int64_t plane() const { return height * width; }
  std::int64_t out_plane() const { return out_height * out_width; }
  std::int64_t window() const { return kernel.h * kernel.w; }
};

}  // namespace loom
