// The dtype table: one row per DType with its name and element size (the C++ element types are
// mapped in loom/core/dtype_dispatch.h).
#include <loom/core/dtype.h>

#include <iterator>

#include <loom/base/error.h>

namespace loom {

namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::f32, "f32", 4}, {DType::f64, "f64", 8}, {DType::bf16, "bf16", 2},
    {DType::f16, "f16", 2}, {DType::i32, "i32", 4}, {DType::i64, "i64", 8},
};

// Rows are in enum order, so a dtype indexes its row.
constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < std::size(kDTypes); ++i)
    if (static_cast<std::size_t>(kDTypes[i].dtype) != i) return false;
  return true;
}
static_assert(in_enum_order());

const DTypeInfo* find(DType dtype) {
  const auto index = static_cast<std::size_t>(dtype);
  return index < std::size(kDTypes) ? &kDTypes[index] : nullptr;
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  const DTypeInfo* info = find(dtype);
  if (info == nullptr) LOOM_THROW("unknown dtype ", static_cast<int>(dtype));
  return info->size;
}

std::string_view dtype_name(DType dtype) {
  const DTypeInfo* info = find(dtype);
  return info ? info->name : "?";
}

DType parse_dtype(std::string_view name) {
  for (const DTypeInfo& info : kDTypes)
    if (info.name == name) return info.dtype;
  LOOM_THROW("unknown dtype '", name, "' (expected f32, f64, bf16, f16, i32 or i64)");
}

bool is_floating(DType dtype) { return dtype != DType::i32 && dtype != DType::i64; }

}  // namespace loom
