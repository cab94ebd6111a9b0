// Activations that a backward only multiplies (a Linear's input, attention's Q, K and V) kept in the
// GEMMs' operand type. Under a GemmOperandScope(bf16 or f16) every GEMM rounds its f32 operands to
// that type (ops.h), so the backward would round these tensors anyway: they are saved rounded, in
// half the bytes, and widened back to f32 (exactly) when the backward uses them, which then computes
// the same numbers bit for bit. Outside such a scope, and for f64 (gradient checks), they are saved
// as they are. The backward must run under the forward's scope (StageRunner runs both under it).
#pragma once

#include <loom/core/ops.h>
#include <loom/core/tensor.h>

namespace loom::detail {

// x as it is to be saved: a bf16 / f16 copy of an f32 x under a rounding GemmOperandScope, else x.
// Only when the caller's reference is the one to x's storage: otherwise something else keeps the
// f32 tensor alive (a ReLU that saved its output, a residual's skip, a view) and a copy would add
// bytes instead of halving them.
inline Tensor as_gemm_operand(const Tensor& x) {
  const DType operands = ops::gemm_operand_dtype();
  if (operands == DType::f32 || x.dtype() != DType::f32 || x.storage().use_count() > 1) return x;
  Tensor narrow = Tensor::empty(x.shape(), operands, x.device());
  ops::cast(x, narrow);
  return narrow;
}

// A tensor saved by as_gemm_operand, in f32 again (the saved tensor itself when it was kept as is).
inline Tensor widened_gemm_operand(const Tensor& saved) {
  if (saved.dtype() != DType::bf16 && saved.dtype() != DType::f16) return saved;
  Tensor wide = Tensor::empty(saved.shape(), DType::f32, saved.device());
  ops::cast(saved, wide);
  return wide;
}

}  // namespace loom::detail
