// CPU element-wise ops through Eigen maps over the tensors' contiguous storage.
#include <Eigen/Core>

#include <loom/core/half.h>

#include "backend.h"

namespace loom::cpu {

namespace {

template <typename T>
using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using Rows = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

template <typename T>
Vec<T> vec(const Tensor& t) {
  return Vec<T>(static_cast<T*>(t.raw_data()), t.numel());
}

// Calls f.template operator()<T>() with T = float or double per the tensor's dtype.
template <typename F>
auto by_float_type(DType dtype, F&& f) {
  if (dtype == DType::f32) return f(float{});
  return f(double{});
}

template <typename T>
T load(const void* p, DType dtype, std::int64_t i) {
  switch (dtype) {
    case DType::f32: return static_cast<T>(static_cast<const float*>(p)[i]);
    case DType::f64: return static_cast<T>(static_cast<const double*>(p)[i]);
    case DType::bf16: return static_cast<T>(half::bf16_to_float(static_cast<const std::uint16_t*>(p)[i]));
    case DType::f16: return static_cast<T>(half::f16_to_float(static_cast<const std::uint16_t*>(p)[i]));
    case DType::i32: return static_cast<T>(static_cast<const std::int32_t*>(p)[i]);
    case DType::i64: return static_cast<T>(static_cast<const std::int64_t*>(p)[i]);
  }
  return T{};
}

template <typename T>
void store(void* p, DType dtype, std::int64_t i, T v) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(p)[i] = static_cast<double>(v); break;
    case DType::bf16: static_cast<std::uint16_t*>(p)[i] = half::float_to_bf16(static_cast<float>(v)); break;
    case DType::f16: static_cast<std::uint16_t*>(p)[i] = half::float_to_f16(static_cast<float>(v)); break;
    case DType::i32: static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v); break;
    case DType::i64: static_cast<std::int64_t*>(p)[i] = static_cast<std::int64_t>(v); break;
  }
}

}  // namespace

void fill(Tensor& out, double value) {
  const std::int64_t n = out.numel();
  void* p = out.raw_data();
  switch (out.dtype()) {
    case DType::f32: vec<float>(out).setConstant(static_cast<float>(value)); break;
    case DType::f64: vec<double>(out).setConstant(value); break;
    default:
      for (std::int64_t i = 0; i < n; ++i) store<double>(p, out.dtype(), i, value);
  }
}

void cast(const Tensor& source, Tensor& out) {
  const std::int64_t n = source.numel();
  const void* src = source.raw_data();
  void* dst = out.raw_data();
  const bool integral = !is_floating(source.dtype()) && !is_floating(out.dtype());
  if (integral) {
    for (std::int64_t i = 0; i < n; ++i) store<std::int64_t>(dst, out.dtype(), i, load<std::int64_t>(src, source.dtype(), i));
  } else {
    for (std::int64_t i = 0; i < n; ++i) store<double>(dst, out.dtype(), i, load<double>(src, source.dtype(), i));
  }
}

void binary(char op, const Tensor& a, const Tensor& b, Tensor& out) {
  by_float_type(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto o = vec<T>(out);
    switch (op) {
      case '+': o = vec<T>(a) + vec<T>(b); break;
      case '-': o = vec<T>(a) - vec<T>(b); break;
      default: o = vec<T>(a) * vec<T>(b); break;
    }
  });
}

void add_scaled(const Tensor& a, double alpha, const Tensor& b, double beta, Tensor& out) {
  by_float_type(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    vec<T>(out) = static_cast<T>(alpha) * vec<T>(a) + static_cast<T>(beta) * vec<T>(b);
  });
}

void scale(Tensor& x, double alpha) {
  by_float_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    vec<T>(x) *= static_cast<T>(alpha);
  });
}

double dot(const Tensor& a, const Tensor& b) {
  return by_float_type(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    double total = 0;  // accumulated in double, in order: deterministic and accurate
    for (std::int64_t i = 0; i < a.numel(); ++i) total += static_cast<double>(pa[i]) * static_cast<double>(pb[i]);
    return total;
  });
}

void bias_add(Tensor& x, const Tensor& bias) {
  by_float_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const std::int64_t n = bias.numel();
    Rows<T> rows(static_cast<T*>(x.raw_data()), x.numel() / std::max<std::int64_t>(n, 1), n);
    rows.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(static_cast<const T*>(bias.raw_data()), n);
  });
}

void bias_grad(const Tensor& grad, Tensor& grad_bias) {
  by_float_type(grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const std::int64_t n = grad_bias.numel();
    if (n == 0) return;
    // Row by row into a contiguous accumulator: unit-stride, vectorised (a column-wise reduction of
    // a row-major matrix strides through memory).
    Eigen::Array<T, Eigen::Dynamic, 1> total = Eigen::Array<T, Eigen::Dynamic, 1>::Zero(n);
    const T* g = static_cast<const T*>(grad.raw_data());
    for (std::int64_t r = 0, rows = grad.numel() / n; r < rows; ++r)
      total += Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(g + r * n, n);
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(static_cast<T*>(grad_bias.raw_data()), n) += total;
  });
}

}  // namespace loom::cpu
