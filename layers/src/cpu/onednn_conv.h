// Conv2d on the CPU through oneDNN (the library PyTorch's CPU convolution calls), on f32 tensors: the
// forward, the input gradient and the weight gradient, each a oneDNN primitive that picks its own
// (blocked) layouts, with reorders from and to loom's NCHW at the edges. Scratch memory comes from
// loom's allocator (MemoryCategory::workspace), and oneDNN's OpenMP threads are set to
// loom::num_threads() before each call. Under GemmOperandScope(bf16), where the CPU has bf16 kernels
// (ops::cpu_bf16_kernels), the primitives take bf16 operands (x, weight, output gradient rounded to
// nearest even by the reorders in) and give f32 results; elsewhere they compute in f32, as cuDNN does
// under mixed precision. Built from onednn_conv.cpp when CMake finds oneDNN, else
// from onednn_conv_none.cpp, where available() is false and the calls throw.
#pragma once

#include <loom/core/tensor.h>
#include <loom/layers/conv2d.h>

namespace loom::detail::onednn {

bool available();
// Whether the primitives take bf16 operands now (GemmOperandScope(bf16) on a CPU with bf16 kernels):
// then they round x to bf16 themselves, and Conv2d may save x in bf16 (gemm_operand_storage.h).
bool bf16_operands();

// y [N, O, H', W'] = conv(x, weight) (+ bias when defined).
void convolve(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y, const Conv2dOptions& o);
// grad_x [N, C, H, W] = the input gradient for output gradient grad_y.
void input_gradient(const Tensor& grad_y, const Tensor& weight, Tensor& grad_x, const Conv2dOptions& o);
// weight_grad += dL/dweight, and bias_grad += dL/dbias when bias_grad is defined.
void accumulate_weight_gradient(const Tensor& x, const Tensor& grad_y, Tensor& weight_grad, Tensor& bias_grad,
                                const Conv2dOptions& o);

}  // namespace loom::detail::onednn
