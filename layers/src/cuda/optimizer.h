// CUDA launches of the fused optimizer updates (optimizers/optimizer_math.h, cuda/optimizer.cu).
#pragma once

#include "cuda/kernels.h"

namespace loom::optim::cuda {

LOOM_CUDA_KERNEL(void sgd_step(Tensor& param, const Tensor& grad, Tensor* buffer, double lr, double grad_scale,
                               double momentum, double dampening, double weight_decay, bool nesterov, bool first))
LOOM_CUDA_KERNEL(void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, double lr,
                                double grad_scale, double beta1, double beta2, double eps, double weight_decay,
                                bool decoupled, double bias_correction1, double bias_correction2_sqrt))

}  // namespace loom::optim::cuda
