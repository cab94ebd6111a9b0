// The CPU optimizer updates over one contiguous span of a parameter: the per-element rules of
// optimizer_math.h (torch.optim's arithmetic, shared with the CUDA kernels) in flat loops that the
// compiler vectorises. cpu_update.cpp is built with -fno-math-errno so that sqrt is one vector
// instruction instead of a call that may set errno (which blocks vectorisation).
#pragma once

#include <cstdint>

namespace loom::optim::cpu {

template <typename T>
struct SgdScalars {
  T lr, momentum, dampening, weight_decay, grad_scale;
  bool nesterov;
};

// n elements of param w, gradient g (times grad_scale) and momentum buffer (null: no momentum);
// `first`: the step that creates the buffer.
template <typename T>
void sgd_span(T* w, const T* g, T* buffer, std::int64_t n, const SgdScalars<T>& s, bool first);

template <typename T>
struct AdamScalars {
  T lr, beta1, beta2, eps, weight_decay, grad_scale, bias_correction1, bias_correction2_sqrt;
  bool decoupled;  // AdamW
};

template <typename T>
void adam_span(T* w, const T* g, T* exp_avg, T* exp_avg_sq, std::int64_t n, const AdamScalars<T>& s);

}  // namespace loom::optim::cpu
