// im2col / col2im: the lowering that turns a convolution into one GEMM. The columns of an image
// form a [channels * kh * kw, out_h * out_w] matrix whose row (c, ki, kj) holds, for every output
// position, the input element that kernel tap meets (zero in the padding). Several images sit side
// by side in one column matrix (row length `row_stride`), so a chunk of a batch is one GEMM.
#pragma once

#include <cstdint>

#include <loom/layers/window2d.h>

namespace loom::detail {

// Writes the columns of `image` [channels, H, W] starting at `col` (row pitch `row_stride`).
template <typename T>
void im2col(const T* image, std::int64_t channels, const WindowGeometry& geometry, T* col, std::int64_t row_stride);

// The adjoint: adds each column entry back onto the input element it came from (image +=).
template <typename T>
void col2im(const T* col, std::int64_t row_stride, std::int64_t channels, const WindowGeometry& geometry, T* image);

}  // namespace loom::detail
