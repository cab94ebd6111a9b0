// cuDNN convolution for Conv2d (cuda/conv2d.cpp). Tensors are NCHW on one CUDA device.
#pragma once

#include <loom/layers/conv2d.h>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

// y = conv(x, weight) (+ bias when defined).
LOOM_CUDA_KERNEL(void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y,
                                     const Conv2dOptions& options))
// grad_x = conv^T(grad_y, weight) (written).
LOOM_CUDA_KERNEL(void conv2d_backward_data(const Tensor& grad_y, const Tensor& weight, Tensor& grad_x,
                                           const Conv2dOptions& options))
// grad_weight += dW(x, grad_y); grad_bias += sum of grad_y over N, H, W when defined.
LOOM_CUDA_KERNEL(void conv2d_backward_filter(const Tensor& x, const Tensor& grad_y, Tensor& grad_weight,
                                             Tensor& grad_bias, const Conv2dOptions& options))

}  // namespace loom::cuda_kernels
