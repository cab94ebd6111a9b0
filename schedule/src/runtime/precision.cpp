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

}  // namespace loom::runtime
