// CUDA kernels of LayerNorm: one block per row for the statistics and dx (sums in double), one
// thread per column for dgamma/dbeta (coalesced across columns, rows looped), accumulating.
#include <loom/core/cuda/block_reduce.cuh>
#include <loom/core/cuda/column_sums.cuh>
#include <loom/core/cuda/context.h>
#include <loom/core/dtype_dispatch.h>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

namespace {

constexpr unsigned int kRowThreads = 256;

template <typename T>
__global__ void forward_kernel(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, long long n,
                               double eps) {
  const long long row = blockIdx.x;
  const T* xr = x + row * n;
  T* yr = y + row * n;
  double sum = 0;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) sum += xr[j];
  const double mu = cuda::block_sum(sum) / static_cast<double>(n);
  double squares = 0;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) {
    const double d = xr[j] - mu;
    squares += d * d;
  }
  const double inv = rsqrt(cuda::block_sum(squares) / static_cast<double>(n) + eps);
  const T m = static_cast<T>(mu), s = static_cast<T>(inv);
  for (long long j = threadIdx.x; j < n; j += blockDim.x)
    yr[j] = gamma ? (xr[j] - m) * s * gamma[j] + beta[j] : (xr[j] - m) * s;
  if (threadIdx.x == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename T>
__global__ void backward_input_kernel(const T* x, const T* gamma, const T* mean, const T* rstd, const T* g, T* dx,
                                      long long n) {
  const long long row = blockIdx.x;
  const T* xr = x + row * n;
  const T* gr = g + row * n;
  const T m = mean[row], s = rstd[row];
  double a = 0, b = 0;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) {
    const T xhat = (xr[j] - m) * s;
    const T dxhat = gamma ? gr[j] * gamma[j] : gr[j];
    a += dxhat;
    b += static_cast<double>(dxhat) * xhat;
  }
  const T ma = static_cast<T>(cuda::block_sum(a) / static_cast<double>(n));
  const T mb = static_cast<T>(cuda::block_sum(b) / static_cast<double>(n));
  for (long long j = threadIdx.x; j < n; j += blockDim.x) {
    const T xhat = (xr[j] - m) * s;
    const T dxhat = gamma ? gr[j] * gamma[j] : gr[j];
    dx[row * n + j] = s * (dxhat - ma - xhat * mb);
  }
}

// The terms of the parameter gradients, summed over rows by add_column_sums (column_sums.cuh):
// dgamma[j] = sum_r g[r, j] * xhat[r, j], dbeta[j] = sum_r g[r, j].
template <typename T>
struct GammaGradientTerm {
  const T *x, *mean, *rstd, *g;
  long long n;
  __device__ double operator()(long long r, long long j) const {
    return static_cast<double>(g[r * n + j]) * ((x[r * n + j] - mean[r]) * rstd[r]);
  }
};

template <typename T>
struct BetaGradientTerm {
  const T* g;
  long long n;
  __device__ double operator()(long long r, long long j) const { return g[r * n + j]; }
};

template <typename T>
const T* optional(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

template <typename T>
void forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean,
             Tensor& rstd) {
  const long long rows = mean.numel(), n = x.numel() / rows;
  forward_kernel<<<static_cast<unsigned int>(rows), kRowThreads, 0, cuda::stream(x.device().index)>>>(
      x.data<T>(), optional<T>(gamma), optional<T>(beta), y.data<T>(), mean.data<T>(), rstd.data<T>(), n, eps);
}

template <typename T>
void backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd, const Tensor& g,
              Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const long long rows = mean.numel(), n = x.numel() / rows;
  cudaStream_t s = cuda::stream(x.device().index);
  backward_input_kernel<<<static_cast<unsigned int>(rows), kRowThreads, 0, s>>>(
      x.data<T>(), optional<T>(gamma), mean.data<T>(), rstd.data<T>(), g.data<T>(), dx.data<T>(), n);
  if (dgamma.defined()) {
    cuda::add_column_sums(GammaGradientTerm<T>{x.data<T>(), mean.data<T>(), rstd.data<T>(), g.data<T>(), n}, rows, n,
                          dgamma.data<T>(), x.device(), s);
    cuda::add_column_sums(BetaGradientTerm<T>{g.data<T>(), n}, rows, n, dbeta.data<T>(), x.device(), s);
  }
}

}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean,
                        Tensor& rstd) {
  if (mean.numel() == 0) return;
  dispatch_floating(x.dtype(), "cuda::layer_norm_forward", [&]<typename T>(T) {
    forward<T>(x, gamma, beta, eps, y, mean, rstd);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& grad_y, Tensor& grad_x, Tensor grad_gamma, Tensor grad_beta) {
  if (mean.numel() == 0) return;
  dispatch_floating(x.dtype(), "cuda::layer_norm_backward", [&]<typename T>(T) {
    backward<T>(x, gamma, mean, rstd, grad_y, grad_x, grad_gamma, grad_beta);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::cuda_kernels
