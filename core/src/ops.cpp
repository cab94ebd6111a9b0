// The dispatch seam of the generic ops: every op validates its arguments here, once, then runs
// the backend of the tensors' device. Code built on loom::ops needs no device branch; the layers
// that have their own CPU loops and CUDA kernels (activations, LayerNorm, attention, convolution,
// pooling, BatchNorm, LSTM, embedding, losses, dropout, optimizers, strided copies) branch on
// is_cuda() once per op in their own sources, as rng.cpp does for random fills. Tensors on the sim
// device (device.h) run the CPU backend: it is host memory with device rules.
#include <loom/core/ops.h>

#include <cmath>
#include <cstring>

#include "backend.h"

namespace loom::ops {

namespace {

#ifdef LOOM_WITH_CUDA
#define LOOM_DISPATCH(device, call)   \
  do {                                \
    if ((device).is_cuda()) {         \
      return cuda::call;              \
    }                                 \
    return cpu::call;                 \
  } while (0)
#else
#define LOOM_DISPATCH(device, call)                                                                  \
  do {                                                                                               \
    if ((device).is_cuda())                                                                          \
      LOOM_THROW("tensor on ", (device).str(),                                                       \
                 " but this build of loom has no CUDA backend (configure with -DLOOM_CUDA=ON)");     \
    return cpu::call;                                                                                \
  } while (0)
#endif

void check_defined(const char* op, const Tensor& t, const char* name) {
  LOOM_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
}

// f32, f64 or bf16 (see ops.h).
void check_gemm_dtype(const char* op, const Tensor& t) {
  LOOM_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64 || t.dtype() == DType::bf16, op,
             ": expected an f32, f64 or bf16 tensor, got ", dtype_name(t.dtype()), " ", t.shape().str());
}

void check_float(const char* op, const Tensor& t) {
  LOOM_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, op, ": expected an f32 or f64 tensor, got ",
             dtype_name(t.dtype()), " ", t.shape().str());
}

// Same device and dtype for every argument of an op.
void check_same(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "first argument");
  check_defined(op, b, "second argument");
  LOOM_CHECK(a.device() == b.device(), op, ": tensors on different devices (", a.device().str(), " and ",
             b.device().str(), ")");
  LOOM_CHECK(a.dtype() == b.dtype(), op, ": dtype mismatch (", dtype_name(a.dtype()), " and ",
             dtype_name(b.dtype()), ")");
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  check_same(op, a, b);
  LOOM_CHECK(a.shape() == b.shape(), op, ": shape mismatch ", a.shape().str(), " vs ", b.shape().str());
}

// op(x) rows/cols for a 2-D matrix x.
std::int64_t op_rows(const Tensor& x, bool t) { return t ? x.size(-1) : x.size(-2); }
std::int64_t op_cols(const Tensor& x, bool t) { return t ? x.size(-2) : x.size(-1); }

GemmShape gemm_shape(const char* op, const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& c,
                     double alpha, double beta) {
  GemmShape g{ta, tb, op_rows(a, ta), op_cols(b, tb), op_cols(a, ta), 1, 0, 0, 0, alpha, beta};
  LOOM_CHECK(op_rows(b, tb) == g.k && c.size(-2) == g.m && c.size(-1) == g.n, op, ": shapes do not compose: ",
             ta ? "a^T " : "a ", a.shape().str(), " x ", tb ? "b^T " : "b ", b.shape().str(), " -> c ",
             c.shape().str());
  return g;
}

}  // namespace

namespace {
thread_local DType t_gemm_operands = DType::f32;

// gemm's f32 path under a GemmOperandScope: operands rounded to 16 bits, f32 accumulation and result.
void dispatch_gemm(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c) {
  if (t_gemm_operands != DType::f32 && a.dtype() == DType::f32)
    LOOM_DISPATCH(a.device(), gemm_rounded_operands(g, a, b, c, t_gemm_operands));
  else
    LOOM_DISPATCH(a.device(), gemm(g, a, b, c));
}
}  // namespace

GemmOperandScope::GemmOperandScope(DType operands) : previous_(t_gemm_operands) {
  LOOM_CHECK(operands == DType::f32 || operands == DType::bf16 || operands == DType::f16,
             "GemmOperandScope: operands of f32, bf16 or f16, not ", dtype_name(operands));
  t_gemm_operands = operands;
}
GemmOperandScope::~GemmOperandScope() { t_gemm_operands = previous_; }
DType gemm_operand_dtype() { return t_gemm_operands; }

bool cpu_bf16_kernels_supported() { return cpu::bf16_kernels_supported(); }
bool cpu_bf16_kernels() { return cpu::bf16_kernels(); }
void use_cpu_bf16_kernels(bool use) { cpu::use_bf16_kernels(use); }

namespace {
// gemm's checks (devices, dtypes, 2-D operands that compose) and its shape, for gemm and RepeatedGemm.
GemmShape checked_gemm_shape(const char* op, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                             const Tensor& c, double alpha, double beta) {
  check_same(op, a, b);
  check_same(op, a, c);
  check_gemm_dtype(op, a);
  LOOM_CHECK(a.rank() == 2 && b.rank() == 2 && c.rank() == 2, op, ": expected 2-D tensors, got a ",
             a.shape().str(), ", b ", b.shape().str(), ", c ", c.shape().str());
  return gemm_shape(op, a, transpose_a, b, transpose_b, c, alpha, beta);
}
}  // namespace

void gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c, double alpha,
          double beta) {
  dispatch_gemm(checked_gemm_shape("gemm", a, transpose_a, b, transpose_b, c, alpha, beta), a, b, c);
}

RepeatedGemm::RepeatedGemm(const Tensor& b, bool transpose_b, std::int64_t rows, double beta)
    : b_(b), transpose_b_(transpose_b), rows_(rows), beta_(beta) {
  LOOM_CHECK(b.rank() == 2 && rows >= 0, "RepeatedGemm: expected a 2-D b and rows >= 0, got b ", b.shape().str(),
             " and ", rows, " rows");
  const GemmShape g{false, transpose_b, rows, op_cols(b, transpose_b), op_rows(b, transpose_b), 1, 0, 0, 0, 1.0, beta};
  constexpr double kMinMultiplyAdds = 1 << 20;  // smaller products stay on OpenBLAS: too little to win back
  if (b.device().is_cpu() && b.dtype() == DType::f32 && t_gemm_operands == DType::f32 &&
      static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) >= kMinMultiplyAdds)
    packed_ = cpu::pack_gemm_right(g, b);
}

void RepeatedGemm::operator()(const Tensor& a, Tensor& c) const {
  if (!packed_ || a.dtype() != DType::f32 || a.rank() != 2 || a.size(0) != rows_ || t_gemm_operands != DType::f32) {
    gemm(a, false, b_, transpose_b_, c, 1.0, beta_);
    return;
  }
  checked_gemm_shape("RepeatedGemm", a, false, b_, transpose_b_, c, 1.0, beta_);
  cpu::gemm_packed_right(packed_.get(), a, c);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  check_same("matmul", a, b);
  LOOM_CHECK(a.rank() == 2 && b.rank() == 2, "matmul: expected 2-D tensors, got ", a.shape().str(), " and ",
             b.shape().str());
  Tensor c = Tensor::empty({op_rows(a, transpose_a), op_cols(b, transpose_b)}, a.dtype(), a.device());
  gemm(a, transpose_a, b, transpose_b, c);
  return c;
}

void gemm_strided_batched(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
                          double alpha, double beta) {
  check_same("gemm_strided_batched", a, b);
  check_same("gemm_strided_batched", a, c);
  check_gemm_dtype("gemm_strided_batched", a);
  LOOM_CHECK(a.rank() == 3 && b.rank() == 3 && c.rank() == 3, "gemm_strided_batched: expected 3-D tensors, got a ",
             a.shape().str(), ", b ", b.shape().str(), ", c ", c.shape().str());
  LOOM_CHECK(a.size(0) == b.size(0) && a.size(0) == c.size(0), "gemm_strided_batched: batch sizes differ: a ",
             a.shape().str(), ", b ", b.shape().str(), ", c ", c.shape().str());
  GemmShape g = gemm_shape("gemm_strided_batched", a, transpose_a, b, transpose_b, c, alpha, beta);
  g.batch = a.size(0);
  g.stride_a = a.size(1) * a.size(2);
  g.stride_b = b.size(1) * b.size(2);
  g.stride_c = c.size(1) * c.size(2);
  dispatch_gemm(g, a, b, c);
}

void gemm_batched(const std::vector<Tensor>& a, bool transpose_a, const std::vector<Tensor>& b, bool transpose_b,
                  std::vector<Tensor>& c, double alpha, double beta) {
  LOOM_CHECK(a.size() == b.size() && a.size() == c.size(), "gemm_batched: ", a.size(), " a, ", b.size(), " b and ",
             c.size(), " c matrices");
  if (a.empty()) return;
  GemmShape g;
  std::vector<const void*> pa, pb;
  std::vector<void*> pc;
  for (std::size_t i = 0; i < a.size(); ++i) {
    check_same("gemm_batched", a[0], a[i]);
    check_same("gemm_batched", a[0], b[i]);
    check_same("gemm_batched", a[0], c[i]);
    check_float("gemm_batched", a[i]);
    LOOM_CHECK(a[i].rank() == 2 && b[i].rank() == 2 && c[i].rank() == 2 && a[i].shape() == a[0].shape() &&
                   b[i].shape() == b[0].shape() && c[i].shape() == c[0].shape(),
               "gemm_batched: problem ", i, " has shapes a ", a[i].shape().str(), ", b ", b[i].shape().str(), ", c ",
               c[i].shape().str(), "; all problems must be 2-D and alike");
    g = gemm_shape("gemm_batched", a[i], transpose_a, b[i], transpose_b, c[i], alpha, beta);
    pa.push_back(a[i].raw_data());
    pb.push_back(b[i].raw_data());
    pc.push_back(c[i].raw_data());
  }
  g.batch = static_cast<std::int64_t>(a.size());
  LOOM_DISPATCH(a[0].device(), gemm_pointers(g, a[0].dtype(), pa, pb, pc));
}

void fill(Tensor& out, double value) {
  check_defined("fill", out, "out");
  LOOM_DISPATCH(out.device(), fill(out, value));
}

void copy(const Tensor& source, Tensor& out) {
  check_defined("copy", source, "source");
  check_defined("copy", out, "out");
  LOOM_CHECK(source.shape() == out.shape() && source.dtype() == out.dtype(), "copy: source ",
             dtype_name(source.dtype()), " ", source.shape().str(), " into ", dtype_name(out.dtype()), " ",
             out.shape().str(), " (use cast to change dtype)");
  if (source.nbytes() == 0 || (source.same_storage(out) && source.offset() == out.offset())) return;
  // Host memory and the sim device (host memory behind its own allocator) copy with memmove:
  // this is the one place where a tensor may cross between them.
  if (!source.device().is_cuda() && !out.device().is_cuda()) {
    std::memmove(out.raw_data(), source.raw_data(), source.nbytes());
    return;
  }
#ifdef LOOM_WITH_CUDA
  // The host waits only where it must: when it reads the result, or when the source is pageable
  // host memory or another GPU's. A pinned source block outlives queued copies (memory.h).
  const bool queued = out.device().is_cuda() && (source.device() == out.device() || source.is_pinned());
  cuda::copy_bytes(out.raw_data(), out.device(), source.raw_data(), source.device(), source.nbytes(), !queued);
#else
  LOOM_THROW("copy between ", source.device().str(), " and ", out.device().str(),
             ": this build of loom has no CUDA backend");
#endif
}

void cast(const Tensor& source, Tensor& out) {
  check_defined("cast", source, "source");
  check_defined("cast", out, "out");
  LOOM_CHECK(source.shape() == out.shape() && source.device() == out.device(), "cast: source ",
             source.shape().str(), " on ", source.device().str(), " into ", out.shape().str(), " on ",
             out.device().str());
  if (source.dtype() == out.dtype()) return copy(source, out);
  LOOM_DISPATCH(out.device(), cast(source, out));
}

void add(const Tensor& a, const Tensor& b, Tensor& out) {
  check_same_shape("add", a, b);
  check_same_shape("add", a, out);
  check_float("add", a);
  LOOM_DISPATCH(a.device(), binary('+', a, b, out));
}

void sub(const Tensor& a, const Tensor& b, Tensor& out) {
  check_same_shape("sub", a, b);
  check_same_shape("sub", a, out);
  check_float("sub", a);
  LOOM_DISPATCH(a.device(), binary('-', a, b, out));
}

void mul(const Tensor& a, const Tensor& b, Tensor& out) {
  check_same_shape("mul", a, b);
  check_same_shape("mul", a, out);
  check_float("mul", a);
  LOOM_DISPATCH(a.device(), binary('*', a, b, out));
}

void axpy(double alpha, const Tensor& x, Tensor& y) {
  check_same_shape("axpy", x, y);
  check_float("axpy", x);
  LOOM_DISPATCH(x.device(), add_scaled(x, alpha, y, 1.0, y));
}

void add_scaled(const Tensor& a, double alpha, const Tensor& b, double beta, Tensor& out) {
  check_same_shape("add_scaled", a, b);
  check_same_shape("add_scaled", a, out);
  check_float("add_scaled", a);
  LOOM_DISPATCH(a.device(), add_scaled(a, alpha, b, beta, out));
}

void scale(Tensor& x, double alpha) {
  check_defined("scale", x, "x");
  check_float("scale", x);
  LOOM_DISPATCH(x.device(), scale(x, alpha));
}

void round_to_(Tensor& x, DType storage) {
  check_defined("round_to_", x, "x");
  LOOM_CHECK(x.dtype() == DType::f32, "round_to_", dtype_name(storage), "_: expected an f32 tensor, got ",
             dtype_name(x.dtype()), " ", x.shape().str());
  LOOM_CHECK(storage == DType::bf16 || storage == DType::f16, "round_to_: rounds to bf16 or f16, not ",
             dtype_name(storage));
  LOOM_DISPATCH(x.device(), round_to(x, storage));
}

double dot(const Tensor& a, const Tensor& b) {
  check_same_shape("dot", a, b);
  check_float("dot", a);
  LOOM_DISPATCH(a.device(), dot(a, b));
}

double sum_of_squares(const Tensor& x) { return dot(x, x); }

void add_sum_of_squares(const Tensor& x, Tensor& total) {
  check_defined("add_sum_of_squares", x, "x");
  check_defined("add_sum_of_squares", total, "total");
  check_float("add_sum_of_squares", x);
  LOOM_CHECK(total.numel() == 1 && total.dtype() == DType::f64 && total.device() == x.device(),
             "add_sum_of_squares: total must be one f64 on ", x.device().str(), ", not ", dtype_name(total.dtype()), " ",
             total.shape().str(), " on ", total.device().str());
  LOOM_DISPATCH(x.device(), add_dot(x, x, total));
}

void bias_add(Tensor& x, const Tensor& bias) {
  check_same("bias_add", x, bias);
  check_float("bias_add", x);
  LOOM_CHECK(bias.rank() == 1 && x.rank() >= 1 && x.size(-1) == bias.size(0), "bias_add: bias ",
             bias.shape().str(), " does not match the last dim of ", x.shape().str());
  LOOM_DISPATCH(x.device(), bias_add(x, bias));
}

void bias_grad(const Tensor& grad, Tensor& grad_bias) {
  check_same("bias_grad", grad, grad_bias);
  check_float("bias_grad", grad);
  LOOM_CHECK(grad_bias.rank() == 1 && grad.rank() >= 1 && grad.size(-1) == grad_bias.size(0), "bias_grad: grad_bias ",
             grad_bias.shape().str(), " does not match the last dim of ", grad.shape().str());
  LOOM_DISPATCH(grad.device(), bias_grad(grad, grad_bias));
}

namespace {
void run_reduce(char op, const Tensor& x, std::int64_t outer, std::int64_t length, std::int64_t inner, Tensor& out,
                Tensor* indices) {
  LOOM_DISPATCH(x.device(), reduce(op, x, outer, length, inner, out, indices));
}

Tensor reduce_dim(char op, const char* name, const Tensor& x, int dim, Tensor* indices) {
  check_defined(name, x, "x");
  check_float(name, x);
  const int d = x.shape().axis(dim);
  std::vector<std::int64_t> dims = x.shape().vec();
  const std::int64_t length = dims[d];
  LOOM_CHECK(op != 'M' || length > 0, name, ": empty dimension ", dim, " of ", x.shape().str());
  const std::int64_t outer = x.shape().outer(d), inner = x.shape().inner(d + 1);
  dims.erase(dims.begin() + d);
  Tensor out = Tensor::empty(Shape(dims), x.dtype(), x.device());
  if (indices) *indices = Tensor::empty(Shape(dims), DType::i64, x.device());
  run_reduce(op, x, outer, length, inner, out, indices);
  return out;
}
}  // namespace

Tensor sum(const Tensor& x, int dim) { return reduce_dim('+', "sum", x, dim, nullptr); }
Tensor mean(const Tensor& x, int dim) { return reduce_dim('m', "mean", x, dim, nullptr); }
Tensor max(const Tensor& x, int dim, Tensor* indices) { return reduce_dim('M', "max", x, dim, indices); }

void softmax(const Tensor& x, Tensor& out) {
  check_same_shape("softmax", x, out);
  check_float("softmax", x);
  LOOM_CHECK(x.rank() >= 1, "softmax: scalar input");
  LOOM_DISPATCH(x.device(), softmax(x, out, false));
}

void log_softmax(const Tensor& x, Tensor& out) {
  check_same_shape("log_softmax", x, out);
  check_float("log_softmax", x);
  LOOM_CHECK(x.rank() >= 1, "log_softmax: scalar input");
  LOOM_DISPATCH(x.device(), softmax(x, out, true));
}

void softmax_backward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  check_same_shape("softmax_backward", y, grad_y);
  check_same_shape("softmax_backward", y, grad_x);
  check_float("softmax_backward", y);
  LOOM_DISPATCH(y.device(), softmax_backward(y, grad_y, grad_x));
}

double max_abs_error(const Tensor& a, const Tensor& b) {
  LOOM_CHECK(a.shape() == b.shape(), "max_abs_error: shape mismatch ", a.shape().str(), " vs ", b.shape().str());
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  double worst = 0;
  for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
  return worst;
}

double max_relative_error(const Tensor& a, const Tensor& b, double floor) {
  LOOM_CHECK(a.shape() == b.shape(), "max_relative_error: shape mismatch ", a.shape().str(), " vs ",
             b.shape().str());
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  double worst = 0;
  for (std::size_t i = 0; i < va.size(); ++i)
    worst = std::max(worst, std::abs(va[i] - vb[i]) / std::max(std::abs(vb[i]), floor));
  return worst;
}

}  // namespace loom::ops
