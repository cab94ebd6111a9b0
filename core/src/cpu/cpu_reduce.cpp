// CPU reductions along one dim ([outer, length, inner] view) and row softmax.
#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Core>

#include "backend.h"

namespace loom::cpu {

namespace {

template <typename T>
void reduce_typed(char op, const T* x, std::int64_t outer, std::int64_t length, std::int64_t inner, T* out,
                  std::int64_t* indices) {
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const T* base = x + o * length * inner + i;
      if (op == 'M') {
        T best = base[0];
        std::int64_t at = 0;
        for (std::int64_t l = 1; l < length; ++l)
          if (base[l * inner] > best || (std::isnan(base[l * inner]) && !std::isnan(best))) {
            best = base[l * inner];
            at = l;
          }
        out[o * inner + i] = best;
        if (indices) indices[o * inner + i] = at;
      } else {
        double total = 0;
        for (std::int64_t l = 0; l < length; ++l) total += base[l * inner];
        if (op == 'm') total = length ? total / static_cast<double>(length) : std::numeric_limits<double>::quiet_NaN();
        out[o * inner + i] = static_cast<T>(total);
      }
    }
  }
}

// Rows through Eigen maps, so exp and the row sums run in SIMD registers. GCC 12 reports Eigen's
// AVX-512 intrinsics (_mm512_undefined_ps) as maybe-uninitialised: a false positive, silenced here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <typename T>
void softmax_typed(const T* x, T* y, std::int64_t rows, std::int64_t n, bool log) {
  using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
  for (std::int64_t r = 0; r < rows && n > 0; ++r) {
    const Eigen::Map<const Row> xr(x + r * n, n);
    Eigen::Map<Row> yr(y + r * n, n);
    const T top = xr.maxCoeff();
    if (log) {
      yr = xr - (top + std::log((xr - top).exp().sum()));
    } else {
      yr = (xr - top).exp();
      yr *= T(1) / yr.sum();
    }
  }
}

template <typename T>
void softmax_backward_typed(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t n) {
  using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
  for (std::int64_t r = 0; r < rows && n > 0; ++r) {
    const Eigen::Map<const Row> yr(y + r * n, n), dyr(dy + r * n, n);
    Eigen::Map<Row>(dx + r * n, n) = yr * (dyr - (dyr * yr).sum());
  }
}
#pragma GCC diagnostic pop

}  // namespace

void reduce(char op, const Tensor& x, std::int64_t outer, std::int64_t length, std::int64_t inner, Tensor& out,
            Tensor* indices) {
  std::int64_t* idx = indices ? indices->data<std::int64_t>() : nullptr;
  if (x.dtype() == DType::f32)
    reduce_typed<float>(op, x.data<float>(), outer, length, inner, out.data<float>(), idx);
  else
    reduce_typed<double>(op, x.data<double>(), outer, length, inner, out.data<double>(), idx);
}

void softmax(const Tensor& x, Tensor& out, bool log) {
  const std::int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
  if (x.dtype() == DType::f32)
    softmax_typed<float>(x.data<float>(), out.data<float>(), rows, n, log);
  else
    softmax_typed<double>(x.data<double>(), out.data<double>(), rows, n, log);
}

void softmax_backward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  const std::int64_t n = y.size(-1), rows = n ? y.numel() / n : 0;
  if (y.dtype() == DType::f32)
    softmax_backward_typed<float>(y.data<float>(), grad_y.data<float>(), grad_x.data<float>(), rows, n);
  else
    softmax_backward_typed<double>(y.data<double>(), grad_y.data<double>(), grad_x.data<double>(), rows, n);
}

}  // namespace loom::cpu
