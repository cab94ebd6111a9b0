// Naive double-precision references for the core op tests.
#pragma once

#include <vector>

#include <loom/core/rng.h>
#include <loom/core/tensor.h>

namespace loom::test {

inline Tensor random_tensor(const Shape& shape, DType dtype, std::uint64_t key, double lo = -1, double hi = 1) {
  Tensor t = Tensor::empty(shape, dtype);
  rng::uniform(t, 2024, key, lo, hi);
  return t;
}

// c = alpha op(a) op(b) + beta c for row-major matrices, in double.
inline std::vector<double> naive_gemm(const std::vector<double>& a, bool ta, const std::vector<double>& b, bool tb,
                                      std::vector<double> c, long m, long n, long k, double alpha, double beta) {
  for (long i = 0; i < m; ++i)
    for (long j = 0; j < n; ++j) {
      double total = 0;
      for (long p = 0; p < k; ++p) total += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = alpha * total + beta * c[i * n + j];
    }
  return c;
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = a.size() == b.size() ? 0 : 1e300;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

}  // namespace loom::test
