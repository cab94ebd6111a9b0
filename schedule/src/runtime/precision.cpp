// Training precision (see precision.h).
#include <loom/core/error.h>
#include <loom/core/ops.h>
#include <loom/runtime/precision.h>

namespace loom::runtime {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  LOOM_THROW("--precision must be fp32 or bf16, got '", name, "'");
}

const char* precision_name(Precision precision) { return precision == Precision::bf16 ? "bf16" : "fp32"; }

void round_to_bf16_(const TensorList& tensors) {
  for (Tensor t : tensors)  // a handle: the storage is shared, rounded in place
    if (t.defined() && t.dtype() == DType::f32) ops::round_to_bf16_(t);
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
  return precision == Precision::bf16 ? cast_all(tensors, DType::f32, DType::bf16) : tensors;
}

TensorList from_boundary(const TensorList& tensors, Precision precision) {
  return precision == Precision::bf16 ? cast_all(tensors, DType::bf16, DType::f32) : tensors;
}

}  // namespace loom::runtime
