#include <loom/core/dtype.h>

#include <loom/core/error.h>

namespace loom {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  LOOM_THROW("unknown dtype ", static_cast<int>(dtype));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64})
    if (dtype_name(d) == name) return d;
  LOOM_THROW("unknown dtype '", name, "' (expected f32, f64, bf16, f16, i32 or i64)");
}

bool is_floating(DType dtype) { return dtype != DType::i32 && dtype != DType::i64; }

}  // namespace loom
