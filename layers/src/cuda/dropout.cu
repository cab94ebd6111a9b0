// CUDA kernel of dropout: one thread per element, the same philox::bernoulli as rng::bernoulli.
#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/core/dtype_dispatch.h>
#include <loom/core/philox.h>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

namespace {

template <typename T>
__global__ void dropout_kernel(const T* x, T* out, long long n, std::uint64_t seed, std::uint64_t key,
                               std::uint64_t first, float keep, T scale) {
  LOOM_GRID_LOOP(i, n) out[i] = philox::bernoulli(seed, key, first + static_cast<std::uint64_t>(i), keep) ? x[i] * scale : T(0);
}

}  // namespace

void dropout_apply(const Tensor& x, Tensor& out, std::uint64_t seed, std::uint64_t key, std::uint64_t first_index,
                   float keep, double scale) {
  const long long n = x.numel();
  if (n == 0) return;
  cudaStream_t s = cuda::stream(x.device().index);
  dispatch_floating(x.dtype(), "cuda::dropout_apply", [&]<typename T>(T) {
    dropout_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(x.data<T>(), out.data<T>(), n, seed, key, first_index,
                                                       keep, static_cast<T>(scale));
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::cuda_kernels
