// Conv2d's CPU path (see conv_path.h). Measured with `loom bench layers` at batch 8, 2 threads,
// against PyTorch 1.13 (which itself calls oneDNN 2.6): oneDNN's direct convolution is as fast as
// PyTorch's on every VGG-19, ResNet-50 and depthwise shape, and loom's Winograd and im2col paths
// are slower on each (table in docs/layers.md), so f32 takes oneDNN whenever it is built in.
// f64, which oneDNN does not support, takes Winograd where it applies and im2col elsewhere.
#include "cpu/conv_path.h"

#include <cstdlib>
#include <string_view>

#include <loom/base/error.h>

#include "cpu/onednn_conv.h"
#include "cpu/winograd.h"

namespace loom::detail {

namespace {

bool winograd_applies(const Conv2dOptions& o) {
  return winograd::applies(o.kernel.h, o.kernel.w, o.stride.h, o.stride.w, o.dilation.h, o.dilation.w, o.padding.h,
                           o.padding.w, o.groups);
}

bool applies(ConvPath path, const Conv2dOptions& o, DType dtype) {
  switch (path) {
    case ConvPath::im2col: return true;
    case ConvPath::winograd: return winograd_applies(o);
    case ConvPath::onednn: return dtype == DType::f32 && onednn::available();
  }
  return false;
}

// LOOM_CONV_PATH, read at each call so that a test or benchmark can switch it.
bool forced_path(ConvPath& path) {
  const char* value = std::getenv("LOOM_CONV_PATH");
  if (!value || !*value) return false;
  const std::string_view name(value);
  for (ConvPath p : {ConvPath::im2col, ConvPath::winograd, ConvPath::onednn})
    if (name == conv_path_name(p)) {
      path = p;
      return true;
    }
  LOOM_THROW("LOOM_CONV_PATH='", excerpt(name), "' is not a Conv2d path (im2col, winograd or onednn)");
}

}  // namespace

ConvPath choose_conv_path(const Conv2dOptions& o, DType dtype) {
  if (ConvPath forced; forced_path(forced) && applies(forced, o, dtype)) return forced;
  if (applies(ConvPath::onednn, o, dtype)) return ConvPath::onednn;
  return winograd_applies(o) ? ConvPath::winograd : ConvPath::im2col;
}

bool conv_path_rounds_input(ConvPath path) {
  switch (path) {
    case ConvPath::im2col: return true;
    case ConvPath::winograd: return false;
    case ConvPath::onednn: return onednn::bf16_operands();
  }
  return false;
}

const char* conv_path_name(ConvPath path) {
  switch (path) {
    case ConvPath::im2col: return "im2col";
    case ConvPath::winograd: return "winograd";
    case ConvPath::onednn: return "onednn";
  }
  return "?";
}

}  // namespace loom::detail
