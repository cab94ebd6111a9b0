// cuDNN batch normalisation for BatchNorm2d (cuda/batch_norm.cu).
// Per-channel tensors (weight, bias, running and saved statistics) have shape [C].
#pragma once

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

// Training: y from batch statistics; running stats updated in place; saves mean and 1/sqrt(var+eps).
LOOM_CUDA_KERNEL(void batch_norm_forward_training(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                                  Tensor& running_mean, Tensor& running_var, double momentum,
                                                  double eps, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd))
LOOM_CUDA_KERNEL(void batch_norm_forward_inference(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                                   const Tensor& running_mean, const Tensor& running_var, double eps,
                                                   Tensor& y))
// Training backward: grad_x written, grad_weight/grad_bias accumulated.
LOOM_CUDA_KERNEL(void batch_norm_backward_training(const Tensor& x, const Tensor& grad_y, const Tensor& weight,
                                                   const Tensor& saved_mean, const Tensor& saved_invstd, double eps,
                                                   Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias))
// Evaluation backward with fixed statistics (mean, invstd): grad_x written, parameter grads accumulated.
LOOM_CUDA_KERNEL(void batch_norm_backward_inference(const Tensor& x, const Tensor& grad_y, const Tensor& weight,
                                                    const Tensor& mean, const Tensor& invstd, Tensor& grad_x,
                                                    Tensor& grad_weight, Tensor& grad_bias))
// invstd[c] = 1 / sqrt(var[c] + eps)
LOOM_CUDA_KERNEL(void inverse_std(const Tensor& var, double eps, Tensor& invstd))

}  // namespace loom::cuda_kernels
