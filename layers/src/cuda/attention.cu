// CUDA kernels of multi-head attention: head split/merge between [B, T, W] packed projections
// and [B*H, T, D] heads (one thread per element), and the masked row softmax (one block per row).
#include <cfloat>

#include <loom/core/cuda/block_reduce.cuh>
#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/core/dtype_dispatch.h>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

namespace {

// heads [B, H, T, D] element i <-> packed [B, T, W] column offset + h*D + d.
__device__ long long packed_index(long long i, long long H, long long Tn, long long D, long long W, long long offset) {
  const long long d = i % D, t = (i / D) % Tn, h = (i / (D * Tn)) % H, b = i / (D * Tn * H);
  return (b * Tn + t) * W + offset + h * D + d;
}

template <typename T>
__global__ void split_kernel(const T* packed, T* heads, long long n, long long H, long long Tn, long long D, long long W,
                             long long offset) {
  LOOM_GRID_LOOP(i, n) heads[i] = packed[packed_index(i, H, Tn, D, W, offset)];
}

template <typename T>
__global__ void merge_kernel(const T* heads, T* packed, long long n, long long H, long long Tn, long long D, long long W,
                             long long offset) {
  LOOM_GRID_LOOP(i, n) packed[packed_index(i, H, Tn, D, W, offset)] = heads[i];
}

template <typename T>
__global__ void masked_softmax_kernel(T* scores, const T* key_padding, long long H, long long Tn, long long S,
                                      bool causal) {
  const long long row = blockIdx.x;  // over B*H*T
  const long long i = row % Tn, b = row / (Tn * H);
  T* r = scores + row * S;
  const T* pad = key_padding ? key_padding + b * S : nullptr;
  const long long limit = causal ? min(S, i + 1) : S;
  const T lowest = -(sizeof(T) == 4 ? T(FLT_MAX) : T(DBL_MAX));
  T m = lowest;
  for (long long j = threadIdx.x; j < limit; j += blockDim.x)
    if (!pad || pad[j] == T(0)) m = max(m, r[j]);
  m = cuda::block_max(m, lowest);
  if (m == lowest) {  // every key masked: zero attention
    for (long long j = threadIdx.x; j < S; j += blockDim.x) r[j] = T(0);
    return;
  }
  T sum = 0;
  for (long long j = threadIdx.x; j < S; j += blockDim.x) {
    const bool keep = j < limit && (!pad || pad[j] == T(0));
    const T e = keep ? exp(r[j] - m) : T(0);
    r[j] = e;
    sum += e;
  }
  const T inv = T(1) / cuda::block_sum(sum);
  for (long long j = threadIdx.x; j < S; j += blockDim.x) r[j] *= inv;
}

}  // namespace

void split_heads(const Tensor& packed, std::int64_t offset, std::int64_t heads, Tensor& out) {
  const long long n = out.numel(), Tn = out.size(1), D = out.size(2), W = packed.size(2);
  if (n == 0) return;
  cudaStream_t s = cuda::stream(packed.device().index);
  dispatch_floating(packed.dtype(), "cuda::split_heads", [&]<typename T>(T) {
    split_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(packed.data<T>(), out.data<T>(), n, heads, Tn, D, W, offset);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void merge_heads(const Tensor& heads_tensor, std::int64_t offset, std::int64_t heads, Tensor& packed) {
  const long long n = heads_tensor.numel(), Tn = heads_tensor.size(1), D = heads_tensor.size(2), W = packed.size(2);
  if (n == 0) return;
  cudaStream_t s = cuda::stream(packed.device().index);
  dispatch_floating(packed.dtype(), "cuda::merge_heads", [&]<typename T>(T) {
    merge_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(heads_tensor.data<T>(), packed.data<T>(), n, heads, Tn, D,
                                                     W, offset);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void masked_softmax(Tensor& scores, const Tensor& key_padding, std::int64_t batch, std::int64_t heads, bool causal) {
  const long long rows = scores.size(0) * scores.size(1), Tn = scores.size(1), S = scores.size(2);
  if (rows == 0 || S == 0) return;
  (void)batch;
  cudaStream_t s = cuda::stream(scores.device().index);
  dispatch_floating(scores.dtype(), "cuda::masked_softmax", [&]<typename T>(T) {
    masked_softmax_kernel<<<static_cast<unsigned int>(rows), 128, 0, s>>>(
        scores.data<T>(), key_padding.defined() ? key_padding.data<T>() : nullptr, heads, Tn, S, causal);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::cuda_kernels
