// CUDA kernels of Embedding: gather rows; scatter-add gradients with atomics (ids repeat).
// Not reproducible run to run: when an id repeats in a batch, the atomics add its rows' gradients
// in whatever order the threads reach them, so the table's gradient (and the training after it)
// may differ in the last bits between two identical runs on the GPU. The CPU backend adds them in
// token order. (A deterministic version sorts the ids and reduces each run of equal ids.)
#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/core/dtype_dispatch.h>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

namespace {

template <typename T, typename Index>
__global__ void gather_kernel(const Index* ids, const T* table, T* y, long long n, long long dim) {
  LOOM_GRID_LOOP(i, n) y[i] = table[static_cast<long long>(ids[i / dim]) * dim + i % dim];
}

template <typename T, typename Index>
__global__ void scatter_add_kernel(const Index* ids, const T* g, T* grad_weight, long long n, long long dim,
                                   long long padding_idx) {
  LOOM_GRID_LOOP(i, n) {
    const long long id = static_cast<long long>(ids[i / dim]);
    if (id != padding_idx) atomicAdd(grad_weight + id * dim + i % dim, g[i]);
  }
}

template <typename T>
void gather(const Tensor& ids, const Tensor& table, Tensor& y, cudaStream_t s) {
  const long long n = y.numel(), dim = table.size(1);
  if (ids.dtype() == DType::i64)
    gather_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(ids.data<std::int64_t>(), table.data<T>(), y.data<T>(), n, dim);
  else
    gather_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(ids.data<std::int32_t>(), table.data<T>(), y.data<T>(), n, dim);
}

template <typename T>
void scatter(const Tensor& ids, const Tensor& g, long long padding_idx, Tensor& grad_weight, cudaStream_t s) {
  const long long n = g.numel(), dim = grad_weight.size(1);
  if (ids.dtype() == DType::i64)
    scatter_add_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(ids.data<std::int64_t>(), g.data<T>(),
                                                           grad_weight.data<T>(), n, dim, padding_idx);
  else
    scatter_add_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(ids.data<std::int32_t>(), g.data<T>(),
                                                           grad_weight.data<T>(), n, dim, padding_idx);
}

}  // namespace

void embedding_forward(const Tensor& ids, const Tensor& table, Tensor& y) {
  if (y.numel() == 0) return;
  cudaStream_t s = cuda::stream(table.device().index);
  dispatch_floating(table.dtype(), "cuda::embedding_forward", [&]<typename T>(T) {
    gather<T>(ids, table, y, s);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void embedding_backward(const Tensor& ids, const Tensor& grad_y, std::int64_t padding_idx, Tensor& grad_weight) {
  if (grad_y.numel() == 0) return;
  cudaStream_t s = cuda::stream(grad_weight.device().index);
  dispatch_floating(grad_weight.dtype(), "cuda::embedding_backward", [&]<typename T>(T) {
    scatter<T>(ids, grad_y, padding_idx, grad_weight, s);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::cuda_kernels
