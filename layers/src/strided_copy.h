// Copies of row blocks between tensors with different row pitches, on the tensors' device (CPU:
// memcpy per row; CUDA: one cudaMemcpy2DAsync on loom's stream). The layers use it to move
// between batch-first and time-major sequences, to gather a chunk of images into one GEMM operand
// and to scatter it back, and to concatenate feature columns (bidirectional LSTM output).
// Offsets, pitches and widths are in elements of the tensors' dtype, relative to each tensor's
// first element. Internal to the layers module.
#pragma once

#include <cstdint>

#include <loom/core/tensor.h>

namespace loom::detail {

// dst[dst_offset + r * dst_pitch + i] = src[src_offset + r * src_pitch + i], r < rows, i < width.
void copy_rows(const Tensor& src, std::int64_t src_offset, std::int64_t src_pitch, Tensor& dst,
               std::int64_t dst_offset, std::int64_t dst_pitch, std::int64_t rows, std::int64_t width);

// [a, b, rest...] -> [b, a, rest...] as a new tensor (e.g. batch-first <-> time-major sequences).
Tensor swap_leading_dims(const Tensor& x);

}  // namespace loom::detail
