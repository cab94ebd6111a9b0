// Per-device CUDA handles shared by every CUDA backend file of loom (core, layers, comm).
// Only for code compiled when LOOM_WITH_CUDA is defined. All loom compute on a device runs on
// that device's one stream, in order, so ops need no extra synchronisation between them.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <vector>

namespace loom::cuda {

// Makes `device` current on this thread and returns its loom stream.
cudaStream_t stream(int device);
cublasHandle_t cublas(int device);  // bound to stream(device)
cudnnHandle_t cudnn(int device);    // bound to stream(device)
// Blocks until all loom work on `device` is done.
void synchronize(int device);
// The devices whose loom stream exists (this process has queued work there).
std::vector<int> devices_in_use();
// `device`'s loom stream if it exists, else nullptr; makes no CUDA call and never throws, for
// destructor paths (after a kernel fault every CUDA call fails, and stream() would throw).
cudaStream_t existing_stream(int device) noexcept;

// Grid size for a grid-stride loop over n elements.
inline unsigned int blocks_for(long long n, unsigned int threads = 256) {
  const long long blocks = (n + threads - 1) / threads;
  return static_cast<unsigned int>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

}  // namespace loom::cuda
