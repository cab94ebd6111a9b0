// The one place that maps a DType to the C++ type of its elements.
//   dispatch_floating(dtype, where, f)  calls f(float{}) for f32 or f(double{}) for f64 (the compute
//                                       types) and throws loom::Error naming `where` for any other
//                                       dtype; host code only (CPU loops, CUDA launches). Callers
//                                       write f as [&]<typename T>(T) { ... T ... }.
//   load_element<T> / store_element<T>  element i of a buffer of any dtype, as T and back (bf16 and
//                                       f16 through float); LOOM_HD, so the CPU loops and the CUDA
//                                       kernels convert the same way.
// Mappings to other libraries' enums (cuDNN data types, safetensors names) stay with their users.
#pragma once

#include <cstdint>
#include <string_view>

#include <loom/core/dtype.h>
#include <loom/base/error.h>
#include <loom/core/half.h>
#include <loom/core/hostdevice.h>

namespace loom {

template <typename F>
decltype(auto) dispatch_floating(DType dtype, std::string_view where, F&& f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    default: LOOM_THROW(where, ": unsupported dtype ", dtype_name(dtype), " (f32 or f64 expected)");
  }
}

template <typename T>
LOOM_HD T load_element(const void* data, DType dtype, std::int64_t i) {
  switch (dtype) {
    case DType::f32: return static_cast<T>(static_cast<const float*>(data)[i]);
    case DType::f64: return static_cast<T>(static_cast<const double*>(data)[i]);
    case DType::bf16: return static_cast<T>(half::bf16_to_float(static_cast<const std::uint16_t*>(data)[i]));
    case DType::f16: return static_cast<T>(half::f16_to_float(static_cast<const std::uint16_t*>(data)[i]));
    case DType::i32: return static_cast<T>(static_cast<const std::int32_t*>(data)[i]);
    case DType::i64: return static_cast<T>(static_cast<const std::int64_t*>(data)[i]);
  }
  return T{};
}

template <typename T>
LOOM_HD void store_element(void* data, DType dtype, std::int64_t i, T value) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(data)[i] = static_cast<float>(value); break;
    case DType::f64: static_cast<double*>(data)[i] = static_cast<double>(value); break;
    case DType::bf16: static_cast<std::uint16_t*>(data)[i] = half::float_to_bf16(static_cast<float>(value)); break;
    case DType::f16: static_cast<std::uint16_t*>(data)[i] = half::float_to_f16(static_cast<float>(value)); break;
    case DType::i32: static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(value); break;
    case DType::i64: static_cast<std::int64_t*>(data)[i] = static_cast<std::int64_t>(value); break;
  }
}

}  // namespace loom
