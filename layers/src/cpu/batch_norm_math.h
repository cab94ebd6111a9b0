// BatchNorm2d's per-channel formulas, shared by the NCHW loops (batch_norm.cpp) and the blocked ones
// (batch_norm_blocked.cpp) so that both round alike: statistics in double, values in T.
#pragma once

#include <cmath>

namespace loom::detail::batch_norm {

// The running statistics after a training step with batch mean m and biased variance var over
// `count` values per channel (the running variance is the unbiased one, as PyTorch's).
template <typename T>
void update_running(T& running_mean, T& running_var, double m, double var, double count, double momentum) {
  running_mean = static_cast<T>((1.0 - momentum) * running_mean + momentum * m);
  running_var = static_cast<T>((1.0 - momentum) * running_var + momentum * var * count / (count - 1.0));
}

inline double inverse_std(double var, double eps) { return 1.0 / std::sqrt(var + eps); }

// y = x * scale + shift for weight w, bias b, mean m, inverse std is.
template <typename T>
void affine(double m, double is, double w, double b, T& scale, T& shift) {
  scale = static_cast<T>(is * w);
  shift = static_cast<T>(b - m * is * w);
}

// dL/dx of one value x with gradient dy, given the channel's mean m, inverse std is, weight w and
// the means of dy and of dy * xhat (zero with fixed statistics).
template <typename T>
T input_gradient(T x, T dy, double m, double is, double w, double mean_dy, double mean_dy_xhat) {
  const double xhat = (x - m) * is;
  return static_cast<T>(w * is * (dy - mean_dy - xhat * mean_dy_xhat));
}

}  // namespace loom::detail::batch_norm
