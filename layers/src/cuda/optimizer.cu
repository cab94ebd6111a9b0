// Fused optimizer update kernels: one thread per element, the same math as the CPU loop.
#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/core/dtype_dispatch.h>

#include "cuda/optimizer.h"
#include "optimizers/optimizer_math.h"

namespace loom::optim::cuda {

namespace {
template <typename T>
__global__ void sgd_kernel(T* param, const T* grad, T* buffer, long long n, T lr, T grad_scale, T momentum,
                           T dampening, T weight_decay, bool nesterov, bool first) {
  LOOM_GRID_LOOP(i, n)
    sgd_update<T>(param[i], grad[i] * grad_scale, buffer ? buffer + i : nullptr, lr, momentum, dampening,
                  weight_decay, nesterov, first);
}

template <typename T>
__global__ void adam_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, long long n, T lr, T grad_scale,
                            T beta1, T beta2, T eps, T weight_decay, bool decoupled, T bc1, T bc2_sqrt) {
  LOOM_GRID_LOOP(i, n)
    adam_update<T>(param[i], grad[i] * grad_scale, exp_avg[i], exp_avg_sq[i], lr, beta1, beta2, eps, weight_decay,
                   decoupled, bc1, bc2_sqrt);
}
}  // namespace

void sgd_step(Tensor& param, const Tensor& grad, Tensor* buffer, double lr, double grad_scale, double momentum,
              double dampening, double weight_decay, bool nesterov, bool first) {
  const long long n = param.numel();
  if (n == 0) return;
  cudaStream_t s = loom::cuda::stream(param.device().index);
  dispatch_floating(param.dtype(), "cuda::sgd_step", [&]<typename T>(T) {
    sgd_kernel<T><<<loom::cuda::blocks_for(n), 256, 0, s>>>(
        param.data<T>(), grad.data<T>(), buffer ? buffer->data<T>() : nullptr, n, T(lr), T(grad_scale), T(momentum),
        T(dampening), T(weight_decay), nesterov, first);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, double lr, double grad_scale,
               double beta1, double beta2, double eps, double weight_decay, bool decoupled, double bias_correction1,
               double bias_correction2_sqrt) {
  const long long n = param.numel();
  if (n == 0) return;
  cudaStream_t s = loom::cuda::stream(param.device().index);
  dispatch_floating(param.dtype(), "cuda::adam_step", [&]<typename T>(T) {
    adam_kernel<T><<<loom::cuda::blocks_for(n), 256, 0, s>>>(
        param.data<T>(), grad.data<T>(), exp_avg.data<T>(), exp_avg_sq.data<T>(), n, T(lr), T(grad_scale), T(beta1),
        T(beta2), T(eps), T(weight_decay), decoupled, T(bias_correction1), T(bias_correction2_sqrt));
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::optim::cuda
