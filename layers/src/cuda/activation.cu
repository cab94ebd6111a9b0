// CUDA kernels of the activation layers: one thread per element over activation_math.h.
#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/core/dtype_dispatch.h>

#include "activation_math.h"
#include "cuda/kernels.h"

namespace loom::cuda_kernels {

namespace {

template <typename T>
__global__ void forward_kernel(activation_math::Kind kind, const T* x, T* y, long long n) {
  LOOM_GRID_LOOP(i, n) y[i] = activation_math::forward(kind, x[i]);
}

template <typename T>
__global__ void backward_kernel(activation_math::Kind kind, const T* saved, const T* g, T* dx, long long n) {
  LOOM_GRID_LOOP(i, n) dx[i] = activation_math::backward(kind, saved[i], g[i]);
}

}  // namespace

void activation_forward(int kind, const Tensor& x, Tensor& y) {
  const long long n = x.numel();
  if (n == 0) return;
  const auto k = static_cast<activation_math::Kind>(kind);
  cudaStream_t s = cuda::stream(x.device().index);
  dispatch_floating(x.dtype(), "cuda::activation_forward", [&]<typename T>(T) {
    forward_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(k, x.data<T>(), y.data<T>(), n);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void activation_backward(int kind, const Tensor& saved, const Tensor& grad_y, Tensor& grad_x) {
  const long long n = saved.numel();
  if (n == 0) return;
  const auto k = static_cast<activation_math::Kind>(kind);
  cudaStream_t s = cuda::stream(saved.device().index);
  dispatch_floating(saved.dtype(), "cuda::activation_backward", [&]<typename T>(T) {
    backward_kernel<<<cuda::blocks_for(n), 256, 0, s>>>(k, saved.data<T>(), grad_y.data<T>(),
                                                        grad_x.data<T>(), n);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::cuda_kernels
