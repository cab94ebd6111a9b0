// Winograd F(2x2, 3x3) convolution (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2016): the CPU fast path of Conv2d for 3x3 kernels with unit stride and dilation,
// one group and padding <= 2. Each 2x2 output tile is A^T [(G g G^T) . (B^T d B)] A, so the
// channel contraction becomes 16 independent GEMMs over all tiles of a chunk of images, with
// 2.25x fewer multiplications than im2col. The backward is exact in the same algebra: the input
// gradient is the forward with the rotated, transposed filter and padding 2 - p; the weight
// gradient is the adjoint, dU[xi] = sum over tiles (A dY A^T)[xi] (B^T d B)[xi], dW = G^T dU G.
// Internal to the layers module; CPU tensors, f32 or f64.
#pragma once

#include <cstdint>

#include <loom/core/tensor.h>

namespace loom::detail::winograd {

// Whether a convolution with these settings can take this path.
bool applies(std::int64_t kernel_h, std::int64_t kernel_w, std::int64_t stride_h, std::int64_t stride_w,
             std::int64_t dilation_h, std::int64_t dilation_w, std::int64_t padding_h, std::int64_t padding_w,
             std::int64_t groups);

// Transformed filters for y = conv(x, weight): U [16, out, in]; for the input gradient
// (backward_data = true): U' [16, in, out] of the 180-degree-rotated filter.
Tensor transform_filter(const Tensor& weight, bool backward_data);

// y [N, O, H + 2p - 2, W + 2p - 2] = conv3x3(x [N, C, H, W], zero padding p) (+ bias [O] when
// defined), with u from transform_filter.
void convolve(const Tensor& x, const Tensor& u, std::int64_t padding, const Tensor& bias, Tensor& y);

// weight_grad [O, C, 3, 3] += the gradient of conv3x3(x, weight, padding) for output gradient grad_y.
void accumulate_filter_gradient(const Tensor& x, const Tensor& grad_y, std::int64_t padding, Tensor& weight_grad);

}  // namespace loom::detail::winograd
