// Tensor ops: the one seam where work is dispatched by device (CPU: Eigen over OpenBLAS;
// CUDA: cuBLAS and small kernels). Callers never branch on the device themselves.
//
// Conventions: `out` arguments are written (=) unless the op says it accumulates; all tensors of
// one call share a device and a floating dtype (f32 or f64) unless stated; shape, dtype and device
// mismatches throw loom::Error naming the op and the shapes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <loom/core/tensor.h>

namespace loom::ops {

// ---- matrix multiply -------------------------------------------------------------------------
// c = alpha * op(a) * op(b) + beta * c, with op(x) = x or x^T; a, b, c are 2-D, all f32, all f64
// or all bf16. bf16 (gemm and gemm_strided_batched) multiplies with f32 accumulation and rounds the
// result to bf16 once: cuBLAS's bf16 tensor-core GEMM on a GPU; on the CPU oneDNN's bf16 kernel where
// the CPU has one (cpu_bf16_kernels below), else the operands widened to f32 (exactly) and an f32
// GEMM, one rounding on the way out: the same numbers up to the f32 sums' order.
void gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
          double alpha = 1.0, double beta = 0.0);
// Returns op(a) * op(b) as a new tensor.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);
// Strided batch: a [batch, ., .], b [batch, ., .], c [batch, ., .]; c[i] = alpha op(a[i]) op(b[i]) + beta c[i].
void gemm_strided_batched(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
                          double alpha = 1.0, double beta = 0.0);
// Pointer batch: independent 2-D problems of equal shape, c[i] = alpha op(a[i]) op(b[i]) + beta c[i].
// Always exact (not affected by GemmOperandScope).
void gemm_batched(const std::vector<Tensor>& a, bool transpose_a, const std::vector<Tensor>& b,
                  bool transpose_b, std::vector<Tensor>& c, double alpha = 1.0, double beta = 0.0);

// c_t = a_t op(b) + beta c_t for many a_t with one b (an RNN's recurrent weights over its time
// steps), each as gemm(a_t, false, b, transpose_b, c_t, 1, beta) computes it up to the
// order of the f32 sums: on the CPU, for f32 tensors outside a rounding GemmOperandScope and products
// of at least 2^20 multiply-adds, b is reordered once into oneDNN's blocked matmul layout and every
// product runs on it (OpenBLAS packs b again on every call: at GNMT's width, 32 x 1024 x 4096,
// 2.7 ms a product against 1.2 ms); elsewhere (GPU, sim, f64, 16-bit operands, a build without
// oneDNN) each product is gemm. b must not change while this lives.
class RepeatedGemm {
 public:
  RepeatedGemm(const Tensor& b, bool transpose_b, std::int64_t rows, double beta);
  void operator()(const Tensor& a, Tensor& c) const;
  bool packed() const { return packed_ != nullptr; }

 private:
  Tensor b_;
  bool transpose_b_;
  std::int64_t rows_;
  double beta_;
  std::shared_ptr<const void> packed_;  // the CPU's reordered b, when used
};

// Reduced-precision compute for f32 tensors: while a GemmOperandScope(bf16) or (f16) is alive on
// this thread, gemm and gemm_strided_batched of f32 tensors round both operands to that type
// (round_to_'s rule) and multiply with f32 accumulation into the f32 c (alpha, beta in f32): on a
// GPU the operands cast to bf16 / f16 and cuBLAS's 16-bit x 16-bit -> f32 tensor-core GEMM; on the
// CPU (and sim) oneDNN's bf16 kernels where the CPU has them (cpu_bf16_kernels below), else rounded
// f32 copies and an f32 GEMM, which computes the same numbers up to the order
// of the f32 sums (a product of two bf16 or two f16 values is exact in f32: 8 + 8 or 11 + 11
// significand bits fit in 24). Mixed-precision training (runtime/precision.h) runs its blocks
// under it; GemmOperandScope(f32) restores exact f32 inside (code that must not round, e.g. a
// CPU-only path whose GPU counterpart is not a GEMM). Scopes nest.
class GemmOperandScope {
 public:
  explicit GemmOperandScope(DType operands);  // f32 (exact), bf16 or f16
  ~GemmOperandScope();
  GemmOperandScope(const GemmOperandScope&) = delete;
  GemmOperandScope& operator=(const GemmOperandScope&) = delete;

 private:
  DType previous_;
};
DType gemm_operand_dtype();  // f32 outside any scope

// bf16 kernels on the CPU: where this CPU has AVX-512 BF16 (and loom was built with oneDNN), the
// CPU's bf16 GEMMs (bf16 tensors, and f32 tensors under GemmOperandScope(bf16)) run on oneDNN's
// bf16 x bf16 -> f32 matmul, the f32 c accumulating the products in f32: the same numbers as the
// emulated path (rounded f32 copies and an f32 GEMM) up to the order of the f32 sums. Problems of
// fewer than 2^15 multiply-adds stay emulated, as do f16 operands and CPUs without the ISA.
// cpu_bf16_kernels() says whether the kernels are in use now: supported, and not turned off by
// LOOM_CPU_BF16=emulate or use_cpu_bf16_kernels(false) (tests of the emulated path).
bool cpu_bf16_kernels_supported();
bool cpu_bf16_kernels();
void use_cpu_bf16_kernels(bool use);

// ---- element-wise ----------------------------------------------------------------------------
void fill(Tensor& out, double value);
void copy(const Tensor& source, Tensor& out);     // same shape and dtype, any devices
void cast(const Tensor& source, Tensor& out);     // same shape, any dtypes, same device
void add(const Tensor& a, const Tensor& b, Tensor& out);   // out = a + b
void sub(const Tensor& a, const Tensor& b, Tensor& out);   // out = a - b
void mul(const Tensor& a, const Tensor& b, Tensor& out);   // out = a * b
void axpy(double alpha, const Tensor& x, Tensor& y);       // y += alpha * x
void scale(Tensor& x, double alpha);                       // x *= alpha
void add_scaled(const Tensor& a, double alpha, const Tensor& b, double beta, Tensor& out);  // alpha a + beta b
double dot(const Tensor& a, const Tensor& b);              // sum of a*b, accumulated in double
double sum_of_squares(const Tensor& x);                    // accumulated in double
// total += sum of x*x, where total is one f64 on x's device: nothing is read back, so summing many
// tensors on a GPU costs one wait (total.item()) instead of one each.
void add_sum_of_squares(const Tensor& x, Tensor& total);
// x = storage(x) in place, for an f32 x and a 16-bit float `storage` (bf16 or f16): each value
// rounded to the nearest one of that type (ties to even; NaN stays NaN, beyond the largest finite
// value becomes inf; f16 keeps its subnormals) and kept in f32 storage. The one rounding rule of
// mixed-precision training (half.h's float_to_bf16 / float_to_f16, the same functions on the CPU
// and in the CUDA kernel).
void round_to_(Tensor& x, DType storage);
inline void round_to_bf16_(Tensor& x) { round_to_(x, DType::bf16); }

// ---- bias ------------------------------------------------------------------------------------
// x [..., n] += bias [n] (broadcast over the leading dims), in place.
void bias_add(Tensor& x, const Tensor& bias);
// grad_bias [n] += sum over the leading dims of grad [..., n] (accumulates).
void bias_grad(const Tensor& grad, Tensor& grad_bias);

// ---- reductions along one dim (the dim is removed from the result's shape) --------------------
Tensor sum(const Tensor& x, int dim);
Tensor mean(const Tensor& x, int dim);
// Max values and, if `indices` is non-null, their i64 positions along dim.
Tensor max(const Tensor& x, int dim, Tensor* indices = nullptr);

// ---- softmax over the last dim ---------------------------------------------------------------
void softmax(const Tensor& x, Tensor& out);
void log_softmax(const Tensor& x, Tensor& out);
// grad_x = y * (grad_y - sum(grad_y * y)) for y = softmax(x).
void softmax_backward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x);

// ---- comparison helpers for tests and checkpoints ----------------------------------------------
// max |a - b| / max(|b|, floor) over elements, computed in double on the host.
double max_relative_error(const Tensor& a, const Tensor& b, double floor = 1e-6);
double max_abs_error(const Tensor& a, const Tensor& b);

}  // namespace loom::ops
