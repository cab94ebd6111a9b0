// Training precision (see precision.h).
#include <loom/base/error.h>
#include <loom/core/ops.h>
#include <loom/runtime/precision.h>

namespace loom::runtime {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  if (name == "fp16") return Precision::fp16;
  LOOM_THROW("--precision must be fp32, bf16 or fp16, got '", excerpt(name), "'");
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

DType value_dtype(Precision precision) {
  switch (precision) {
    case Precision::fp32: return DType::f32;
    case Precision::bf16: return DType::bf16;
    case Precision::fp16: return DType::f16;
  }
  return DType::f32;
}

void round_to_precision_(const TensorList& tensors, Precision precision) {
  if (precision == Precision::fp32) return;
  for (Tensor t : tensors)  // a handle: the storage is shared, rounded in place
    if (t.defined() && t.dtype() == DType::f32) ops::round_to_(t, value_dtype(precision));
}

namespace {
// Every defined tensor of dtype `from` cast to `to`; the others as they are.
TensorList cast_all(const TensorList& tensors, DType from, DType to) {
  TensorList out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    if (!t.defined() || t.dtype() != from) {
      out.push_back(t);
      continue;
    }
    Tensor cast = Tensor::empty(t.shape(), to, t.device());
    ops::cast(t, cast);
    out.push_back(cast);
  }
  return out;
}
}  // namespace

TensorList to_boundary(const TensorList& tensors, Precision precision) {
  return precision == Precision::fp32 ? tensors : cast_all(tensors, DType::f32, value_dtype(precision));
}

TensorList from_boundary(const TensorList& tensors, Precision precision) {
  return precision == Precision::fp32 ? tensors : cast_all(tensors, value_dtype(precision), DType::f32);
}

}  // namespace loom::runtime
