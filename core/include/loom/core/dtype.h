// Element types a Tensor can hold. f32 is the compute type; f64 is for reference tests;
// bf16 and f16 are storage types (cast to/from f32); i32 and i64 hold labels and indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom {

enum class DType : std::uint8_t { f32, f64, bf16, f16, i32, i64 };

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "f32", "f64", "bf16", "f16", "i32", "i64"
DType parse_dtype(std::string_view name);  // throws loom::Error on an unknown name
bool is_floating(DType dtype);

template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };

}  // namespace loom
