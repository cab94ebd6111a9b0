// Pitched device-to-device copies on loom's stream (cuda/strided_copy.h).
#include "cuda/strided_copy.h"

#include <loom/core/cuda/context.h>
#include <loom/base/error.h>

namespace loom::cuda_kernels {

void copy_rows(const void* src, std::int64_t src_pitch_bytes, void* dst, std::int64_t dst_pitch_bytes,
               std::int64_t rows, std::int64_t width_bytes, int device) {
  LOOM_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<std::size_t>(dst_pitch_bytes), src,
                                    static_cast<std::size_t>(src_pitch_bytes), static_cast<std::size_t>(width_bytes),
                                    static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice, cuda::stream(device)));
}

}  // namespace loom::cuda_kernels
