// cuDNN pooling for MaxPool2d and AvgPool2d (cuda/pooling.cpp). NCHW tensors on one CUDA device.
#pragma once

#include <loom/layers/pooling.h>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

enum class PoolMode { max, average_include_padding, average_exclude_padding };

LOOM_CUDA_KERNEL(void pool2d_forward(PoolMode mode, const WindowGeometry& geometry, const Tensor& x, Tensor& y))
// grad_x = pooling backward (written); cuDNN needs the forward's input and output.
LOOM_CUDA_KERNEL(void pool2d_backward(PoolMode mode, const WindowGeometry& geometry, const Tensor& x, const Tensor& y,
                                      const Tensor& grad_y, Tensor& grad_x))

}  // namespace loom::cuda_kernels
