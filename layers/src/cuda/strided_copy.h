// CUDA side of strided_copy.h: a pitched 2-D copy on loom's stream (pitches and width in bytes).
#pragma once

#include <cstdint>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

LOOM_CUDA_KERNEL(void copy_rows(const void* src, std::int64_t src_pitch_bytes, void* dst, std::int64_t dst_pitch_bytes,
                                std::int64_t rows, std::int64_t width_bytes, int device))

}  // namespace loom::cuda_kernels
