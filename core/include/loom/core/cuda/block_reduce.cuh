// Block-wide reductions for kernels in which one block owns one output (a row, a channel, a block's
// partial sum): every thread of the block calls them with its own value, and every thread gets the
// block's result. The combination order depends only on the block size, so a run reproduces itself.
// Blocks of a multiple of 32 threads, at most 1024. Device code: include from .cu files only.
#pragma once

#include <cuda_runtime.h>

namespace loom::cuda {

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};

struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return max(a, b); }
};

// op over the 32 lanes' values, left in lane 0 (the other lanes hold partial results).
template <typename T, typename Op>
__device__ T warp_reduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

// op over the block's values: each warp's, then the warps' in warp order. `identity` fills the
// lanes of warps the block does not have.
template <typename T, typename Op>
__device__ T block_reduce(T v, T identity, Op op) {
  __shared__ T partial[32];
  __shared__ T total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce(v, op);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>((blockDim.x + 31) / 32) ? partial[lane] : identity;
    v = warp_reduce(v, op);
    if (lane == 0) total = v;
  }
  __syncthreads();
  const T result = total;
  __syncthreads();  // partial and total may be reused by the next call
  return result;
}

template <typename T>
__device__ T block_sum(T v) {
  return block_reduce(v, T(0), SumOp{});
}

// `lowest` is the smallest value of T the caller's data may hold (-inf for softmax rows).
template <typename T>
__device__ T block_max(T v, T lowest) {
  return block_reduce(v, lowest, MaxOp{});
}

}  // namespace loom::cuda
