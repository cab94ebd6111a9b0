// BatchNorm2d's CPU loops for an activation in the blocked layout (blocked_layout.h, f32): the 16
// channels of a block sit side by side, so each channel's sums run in their own lane of a vector and
// a channel block is the unit of work over loom's threads. Per channel the same sums in double, in
// the same order (over the batch, then the plane), whatever the thread count; the same formulas as
// the NCHW loops in batch_norm.cpp.
#pragma once

#include <loom/core/tensor.h>

namespace loom::detail::batch_norm {

// y = (x - mean) * invstd * weight + bias with this batch's statistics (training: also updates the
// running ones) or the running ones; mean and invstd [C] are what the backward needs.
void forward_blocked(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& running_mean,
                     Tensor& running_var, double eps, double momentum, bool training, Tensor& y, Tensor& mean,
                     Tensor& invstd);

// grad_x, and grad_weight/grad_bias += their gradients. batch_statistics: mean and invstd came from
// this batch (so they depend on x too).
void backward_blocked(const Tensor& x, const Tensor& grad_y, const Tensor& weight, const Tensor& mean,
                      const Tensor& invstd, bool batch_statistics, Tensor& grad_x, Tensor& grad_weight,
                      Tensor& grad_bias);

}  // namespace loom::detail::batch_norm
