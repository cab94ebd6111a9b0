// Per-element optimizer updates, written once for the CPU loop and the CUDA kernel. Each follows
// torch.optim's arithmetic order (so fp32 results agree to rounding).
#pragma once

#include <cmath>

#include <loom/core/hostdevice.h>

namespace loom::optim {

// SGD with momentum; `first` marks the step that creates the buffer (buffer = d_p).
template <typename T>
LOOM_HD void sgd_update(T& param, T grad, T* buffer, T lr, T momentum, T dampening, T weight_decay, bool nesterov,
                        bool first) {
  T d = grad;
  if (weight_decay != T(0)) d = d + weight_decay * param;
  if (buffer) {
    *buffer = first ? d : momentum * *buffer + (T(1) - dampening) * d;
    d = nesterov ? d + momentum * *buffer : *buffer;
  }
  param = param - lr * d;
}

// Adam / AdamW (torch.optim.Adam's single-tensor path): bias corrections passed in.
template <typename T>
LOOM_HD void adam_update(T& param, T grad, T& exp_avg, T& exp_avg_sq, T lr, T beta1, T beta2, T eps, T weight_decay,
                         bool decoupled, T bias_correction1, T bias_correction2_sqrt) {
  if (decoupled) {
    param = param * (T(1) - lr * weight_decay);
  } else if (weight_decay != T(0)) {
    grad = grad + weight_decay * param;
  }
  exp_avg = exp_avg * beta1 + grad * (T(1) - beta1);
  exp_avg_sq = exp_avg_sq * beta2 + grad * grad * (T(1) - beta2);
  const T denom = sqrt(exp_avg_sq) / bias_correction2_sqrt + eps;
  param = param - (lr / bias_correction1) * (exp_avg / denom);
}

}  // namespace loom::optim
