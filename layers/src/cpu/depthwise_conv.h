// Direct CPU kernels of a depthwise convolution (one kxk filter per channel, groups == channels):
// every tap is one multiply-add along an output row, so a plane costs k*k passes over contiguous
// memory (vectorised at stride 1) instead of an im2col matrix and one tiny GEMM per channel.
// Planes are spread over loom's thread pool: forward and the input gradient by (image, channel),
// the weight gradient by channel, so no two threads write the same element.
// x, y: [N, C, H, W] / [N, C, H', W']; weight [C, 1, kh, kw]; bias [C] or undefined.
// Internal to the layers module.
#pragma once

#include <loom/core/tensor.h>
#include <loom/layers/window2d.h>

namespace loom::detail::depthwise {

// y = conv(x, weight) + bias.
void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const WindowGeometry& g, Tensor& y);
// grad_x = conv^T(grad_y, weight) (grad_x is overwritten).
void input_gradient(const Tensor& grad_y, const Tensor& weight, const WindowGeometry& g, Tensor& grad_x);
// grad_weight += correlation of grad_y with x; grad_bias (when defined) += per-channel sums.
void accumulate_weight_gradient(const Tensor& x, const Tensor& grad_y, const WindowGeometry& g, Tensor& grad_weight,
                                Tensor& grad_bias);

}  // namespace loom::detail::depthwise
