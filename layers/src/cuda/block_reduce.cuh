// Block-wide sum and max for the layers' row kernels (one block per row). Every thread of the
// block must call them; the result is returned to all threads.
#pragma once

#include <cuda_runtime.h>

namespace loom::cuda_kernels {

template <typename T>
__device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T>
__device__ T warp_max(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v = max(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

template <typename T>
__device__ T block_sum(T v) {
  __shared__ T partial[32];
  __shared__ T total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>((blockDim.x + 31) / 32) ? partial[lane] : T(0);
    v = warp_sum(v);
    if (lane == 0) total = v;
  }
  __syncthreads();
  const T result = total;
  __syncthreads();  // partial/total may be reused by the next call
  return result;
}

template <typename T>
__device__ T block_max(T v, T lowest) {
  __shared__ T partial[32];
  __shared__ T total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_max(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>((blockDim.x + 31) / 32) ? partial[lane] : lowest;
    v = warp_max(v);
    if (lane == 0) total = v;
  }
  __syncthreads();
  const T result = total;
  __syncthreads();
  return result;
}

#define LOOM_GRID_LOOP(i, n)                                                                          \
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<long long>(blockDim.x) * gridDim.x)

}  // namespace loom::cuda_kernels
