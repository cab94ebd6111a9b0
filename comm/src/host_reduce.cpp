#include "host_reduce.h"

#include <loom/base/error.h>

namespace loom::comm::detail {

namespace {

template <typename T>
void accumulate_typed(T* __restrict dst, const T* __restrict src, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) dst[i] += src[i];
}

template <typename T>
void scale_typed(T* data, std::int64_t count, T factor) {
  for (std::int64_t i = 0; i < count; ++i) data[i] *= factor;
}

}  // namespace

std::size_t reducible_size(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f64:
    case DType::i32:
    case DType::i64: return dtype_size(dtype);
    default: LOOM_THROW("loom::comm reduces f32, f64, i32 and i64 buffers, not ", dtype_name(dtype));
  }
}

void accumulate(void* dst, const void* src, std::int64_t count, DType dtype) {
  switch (dtype) {
    case DType::f32: return accumulate_typed(static_cast<float*>(dst), static_cast<const float*>(src), count);
    case DType::f64: return accumulate_typed(static_cast<double*>(dst), static_cast<const double*>(src), count);
    case DType::i32:
      return accumulate_typed(static_cast<std::int32_t*>(dst), static_cast<const std::int32_t*>(src), count);
    case DType::i64:
      return accumulate_typed(static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(src), count);
    default: reducible_size(dtype);
  }
}

void scale(void* data, std::int64_t count, DType dtype, double factor) {
  if (factor == 1.0) return;
  switch (dtype) {
    case DType::f32: return scale_typed(static_cast<float*>(data), count, static_cast<float>(factor));
    case DType::f64: return scale_typed(static_cast<double*>(data), count, factor);
    default: LOOM_THROW("cannot scale a ", dtype_name(dtype), " buffer by ", factor, " (average needs a floating dtype)");
  }
}

}  // namespace loom::comm::detail
