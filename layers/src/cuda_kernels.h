// Declarations of the layers' CUDA kernels (layers/src/*.cu), one group per layer file. In a
// build without CUDA they become stubs that throw: a CUDA tensor cannot exist there, so they are
// never reached, but the CPU code that dispatches on the device compiles and links unchanged.
#pragma once

#include <cstdint>

#include <loom/core/error.h>
#include <loom/core/tensor.h>

#ifdef LOOM_WITH_CUDA
#define LOOM_CUDA_KERNEL(declaration) declaration;
#else
#define LOOM_CUDA_KERNEL(declaration) \
  [[noreturn]] inline declaration { LOOM_THROW("this build of loom has no CUDA backend"); }
#endif

#ifndef LOOM_WITH_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif

namespace loom::cuda_kernels {

// activation.cu — kind is activation_math::Kind; saved is x (GELU) or y (the others).
LOOM_CUDA_KERNEL(void activation_forward(int kind, const Tensor& x, Tensor& y))
LOOM_CUDA_KERNEL(void activation_backward(int kind, const Tensor& saved, const Tensor& grad_y, Tensor& grad_x))

}  // namespace loom::cuda_kernels

#ifndef LOOM_WITH_CUDA
#pragma GCC diagnostic pop
#endif
