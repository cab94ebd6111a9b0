// Element-wise activation math, written once for the CPU loops and the CUDA kernels.
// Derivatives are expressed through what forward saved: ReLU, Tanh and Sigmoid through their
// output y, GELU through its input x. GELU is the exact erf form (PyTorch's default).
#pragma once

#include <math.h>

#include <loom/core/hostdevice.h>

namespace loom::activation_math {

enum class Kind : unsigned char { relu, gelu, tanh, sigmoid };

LOOM_HD float erf_of(float x) { return erff(x); }
LOOM_HD double erf_of(double x) { return erf(x); }
LOOM_HD float exp_of(float x) { return expf(x); }
LOOM_HD double exp_of(double x) { return exp(x); }
LOOM_HD float tanh_of(float x) { return tanhf(x); }
LOOM_HD double tanh_of(double x) { return tanh(x); }

template <typename T>
LOOM_HD T forward(Kind kind, T x) {
  switch (kind) {
    case Kind::relu: return x > T(0) ? x : T(0);
    case Kind::gelu: return T(0.5) * x * (T(1) + erf_of(x * T(0.70710678118654752440)));
    case Kind::tanh: return tanh_of(x);
    case Kind::sigmoid: return T(1) / (T(1) + exp_of(-x));
  }
  return x;
}

// d(activation)/dx * grad, from the saved value (y for relu/tanh/sigmoid, x for gelu).
template <typename T>
LOOM_HD T backward(Kind kind, T saved, T grad) {
  switch (kind) {
    case Kind::relu: return saved > T(0) ? grad : T(0);
    case Kind::gelu: {
      const T cdf = T(0.5) * (T(1) + erf_of(saved * T(0.70710678118654752440)));
      const T pdf = exp_of(T(-0.5) * saved * saved) * T(0.39894228040143267794);
      return grad * (cdf + saved * pdf);
    }
    case Kind::tanh: return grad * (T(1) - saved * saved);
    case Kind::sigmoid: return grad * saved * (T(1) - saved);
  }
  return grad;
}

// Whether backward needs the input (true) or the output (false).
LOOM_HD bool saves_input(Kind kind) { return kind == Kind::gelu; }

}  // namespace loom::activation_math
