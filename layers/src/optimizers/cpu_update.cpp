// CPU optimizer spans (see cpu_update.h). Each loop takes its options as template arguments, so
// the branches of optimizer_math.h fold away and the body is straight-line, vectorisable code.
#include "optimizers/cpu_update.h"

#include "optimizers/optimizer_math.h"

namespace loom::optim::cpu {

namespace {

template <typename T, bool Momentum, bool Nesterov, bool First>
void sgd_loop(T* __restrict w, const T* __restrict g, T* __restrict buffer, std::int64_t n, const SgdScalars<T>& s) {
  for (std::int64_t j = 0; j < n; ++j)
    sgd_update<T>(w[j], g[j] * s.grad_scale, Momentum ? buffer + j : nullptr, s.lr, s.momentum, s.dampening,
                  s.weight_decay, Nesterov, First);
}

template <typename T, bool Decoupled>
void adam_loop(T* __restrict w, const T* __restrict g, T* __restrict m, T* __restrict v, std::int64_t n,
               const AdamScalars<T>& s) {
  for (std::int64_t j = 0; j < n; ++j)
    adam_update<T>(w[j], g[j] * s.grad_scale, m[j], v[j], s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, Decoupled,
                   s.bias_correction1, s.bias_correction2_sqrt);
}

}  // namespace

template <typename T>
void sgd_span(T* w, const T* g, T* buffer, std::int64_t n, const SgdScalars<T>& s, bool first) {
  if (!buffer) return sgd_loop<T, false, false, false>(w, g, nullptr, n, s);
  if (s.nesterov)
    return first ? sgd_loop<T, true, true, true>(w, g, buffer, n, s) : sgd_loop<T, true, true, false>(w, g, buffer, n, s);
  first ? sgd_loop<T, true, false, true>(w, g, buffer, n, s) : sgd_loop<T, true, false, false>(w, g, buffer, n, s);
}

template <typename T>
void adam_span(T* w, const T* g, T* exp_avg, T* exp_avg_sq, std::int64_t n, const AdamScalars<T>& s) {
  if (s.decoupled) return adam_loop<T, true>(w, g, exp_avg, exp_avg_sq, n, s);
  adam_loop<T, false>(w, g, exp_avg, exp_avg_sq, n, s);
}

template void sgd_span<float>(float*, const float*, float*, std::int64_t, const SgdScalars<float>&, bool);
template void sgd_span<double>(double*, const double*, double*, std::int64_t, const SgdScalars<double>&, bool);
template void adam_span<float>(float*, const float*, float*, float*, std::int64_t, const AdamScalars<float>&);
template void adam_span<double>(double*, const double*, double*, double*, std::int64_t, const AdamScalars<double>&);

}  // namespace loom::optim::cpu
