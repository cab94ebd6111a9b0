// CPU element-wise ops through Eigen maps over the tensors' contiguous storage.
#include <Eigen/Core>

#include <loom/core/dtype_dispatch.h>
#include <loom/core/half.h>
#include <loom/core/parallel.h>

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

// Elements [first, first + count) of t.
template <typename T>
Vec<T> segment(const Tensor& t, std::int64_t first, std::int64_t count) {
  return Vec<T>(static_cast<T*>(t.raw_data()) + first, count);
}

// Ops of one IEEE operation per element (so no contraction to an FMA can differ between a chunk's
// vector body and its scalar edges) run over the pool in chunks of at least 64k elements: the
// result does not depend on the thread count. body(first, count) does one chunk.
template <typename Body>
void over_pool(std::int64_t n, Body body) {
  parallel_for(n, std::int64_t{1} << 16, [&](std::int64_t first, std::int64_t last) { body(first, last - first); });
}

}  // namespace

void fill(Tensor& out, double value) {
  const std::int64_t n = out.numel();
  void* p = out.raw_data();
  switch (out.dtype()) {
    case DType::f32:
      over_pool(n, [&](std::int64_t first, std::int64_t count) {
        segment<float>(out, first, count).setConstant(static_cast<float>(value));
      });
      break;
    case DType::f64: vec<double>(out).setConstant(value); break;
    default:
      for (std::int64_t i = 0; i < n; ++i) store_element<double>(p, out.dtype(), i, value);
  }
}

namespace {
// f32 to and from the 16-bit float types (half.h's rounding), over the pool: saved activations and
// bf16 operands convert on every forward and backward.
template <typename Convert>
void convert(std::int64_t n, Convert convert_one) {
  parallel_for(n, std::int64_t{1} << 16, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) convert_one(i);
  });
}

bool cast_16bit(const Tensor& source, Tensor& out) {
  const std::int64_t n = source.numel();
  const DType from = source.dtype(), to = out.dtype();
  if (from == DType::f32 && (to == DType::bf16 || to == DType::f16)) {
    const float* x = source.data<float>();
    auto* y = static_cast<std::uint16_t*>(out.raw_data());
    if (to == DType::bf16) convert(n, [&](std::int64_t i) { y[i] = half::float_to_bf16(x[i]); });
    else convert(n, [&](std::int64_t i) { y[i] = half::float_to_f16(x[i]); });
    return true;
  }
  if (to == DType::f32 && (from == DType::bf16 || from == DType::f16)) {
    const auto* x = static_cast<const std::uint16_t*>(source.raw_data());
    float* y = out.data<float>();
    if (from == DType::bf16) convert(n, [&](std::int64_t i) { y[i] = half::bf16_to_float(x[i]); });
    else convert(n, [&](std::int64_t i) { y[i] = half::f16_to_float(x[i]); });
    return true;
  }
  return false;
}
}  // namespace

void cast(const Tensor& source, Tensor& out) {
  if (cast_16bit(source, out)) return;
  const std::int64_t n = source.numel();
  const void* src = source.raw_data();
  void* dst = out.raw_data();
  const bool integral = !is_floating(source.dtype()) && !is_floating(out.dtype());
  if (integral) {
    for (std::int64_t i = 0; i < n; ++i)
      store_element<std::int64_t>(dst, out.dtype(), i, load_element<std::int64_t>(src, source.dtype(), i));
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      store_element<double>(dst, out.dtype(), i, load_element<double>(src, source.dtype(), i));
  }
}

void binary(char op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_floating(a.dtype(), "cpu::binary", [&]<typename T>(T) {
    over_pool(out.numel(), [&](std::int64_t first, std::int64_t count) {
      auto o = segment<T>(out, first, count);
      const auto x = segment<T>(a, first, count), y = segment<T>(b, first, count);
      switch (op) {
        case '+': o = x + y; break;
        case '-': o = x - y; break;
        default: o = x * y; break;
      }
    });
  });
}

void add_scaled(const Tensor& a, double alpha, const Tensor& b, double beta, Tensor& out) {
  dispatch_floating(a.dtype(), "cpu::add_scaled", [&]<typename T>(T) {
    vec<T>(out) = static_cast<T>(alpha) * vec<T>(a) + static_cast<T>(beta) * vec<T>(b);
  });
}

void scale(Tensor& x, double alpha) {
  dispatch_floating(x.dtype(), "cpu::scale", [&]<typename T>(T) {
    over_pool(x.numel(), [&](std::int64_t first, std::int64_t count) {
      segment<T>(x, first, count) *= static_cast<T>(alpha);
    });
  });
}

void round_to(Tensor& x, DType storage) {
  round_to(static_cast<const float*>(x.raw_data()), static_cast<float*>(x.raw_data()), x.numel(), storage);
}

void round_to(const float* source, float* out, std::int64_t count, DType storage) {
  if (storage == DType::bf16)
    for (std::int64_t i = 0; i < count; ++i) out[i] = half::bf16_to_float(half::float_to_bf16(source[i]));
  else
    for (std::int64_t i = 0; i < count; ++i) out[i] = half::f16_to_float(half::float_to_f16(source[i]));
}

double dot(const Tensor& a, const Tensor& b) {
  return dispatch_floating(a.dtype(), "cpu::dot", [&]<typename T>(T) {
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    double total = 0;  // accumulated in double, in order: deterministic and accurate
    for (std::int64_t i = 0; i < a.numel(); ++i) total += static_cast<double>(pa[i]) * static_cast<double>(pb[i]);
    return total;
  });
}

void add_dot(const Tensor& a, const Tensor& b, Tensor& total) { total.data<double>()[0] += dot(a, b); }

void bias_add(Tensor& x, const Tensor& bias) {
  dispatch_floating(x.dtype(), "cpu::bias_add", [&]<typename T>(T) {
    const std::int64_t n = bias.numel();
    Rows<T> rows(static_cast<T*>(x.raw_data()), x.numel() / std::max<std::int64_t>(n, 1), n);
    rows.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(static_cast<const T*>(bias.raw_data()), n);
  });
}

void bias_grad(const Tensor& grad, Tensor& grad_bias) {
  dispatch_floating(grad.dtype(), "cpu::bias_grad", [&]<typename T>(T) {
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
