// CPU matrix multiply: OpenBLAS (cblas_?gemm) on one thread per call, with loom's own pool
// (parallel.h) splitting the work: batches across problems, a single large problem into row or
// column panels. One pool per process: OpenBLAS's threads would otherwise spin for a long while
// after every call (OPENBLAS_THREAD_TIMEOUT, 2^28 cycles by default) and starve loom's pool
// between GEMMs (a 3x3 Conv2d at 2 threads ran slower than at 1).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include <cblas.h>

#include <loom/base/error.h>
#include <loom/core/memory.h>
#include <loom/core/parallel.h>
#include <loom/core/threads.h>

#include "backend.h"
#include "cpu/onednn_matmul.h"

namespace loom::cpu {

namespace {

// Below this many multiply-adds a problem is not worth waking the pool for.
constexpr std::int64_t kThreadedWork = std::int64_t{1} << 21;
// Panels are cut at multiples of this many rows or columns (OpenBLAS kernel widths divide it).
constexpr std::int64_t kPanelAlign = 32;

void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// One row-major problem with explicit leading dimensions: c[m×n] = alpha op(a) op(b) + beta c.
struct Problem {
  bool ta, tb;
  std::int64_t m, n, k, lda, ldb, ldc;
  double alpha, beta;
};

void blas(const Problem& p, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans, p.tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), static_cast<float>(p.alpha), a,
              static_cast<int>(p.lda), b, static_cast<int>(p.ldb), static_cast<float>(p.beta), c,
              static_cast<int>(p.ldc));
}

void blas(const Problem& p, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans, p.tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), p.alpha, a, static_cast<int>(p.lda),
              b, static_cast<int>(p.ldb), p.beta, c, static_cast<int>(p.ldc));
}

Problem problem_of(const GemmShape& g) {
  return {g.transpose_a,
          g.transpose_b,
          g.m,
          g.n,
          g.k,
          std::max<std::int64_t>(g.transpose_a ? g.m : g.k, 1),
          std::max<std::int64_t>(g.transpose_b ? g.k : g.n, 1),
          std::max<std::int64_t>(g.n, 1),
          g.alpha,
          g.beta};
}

// k == 0 means c = beta * c (BLAS implementations differ on degenerate sizes; be explicit).
template <typename T>
bool degenerate(const GemmShape& g, T* c) {
  if (g.m == 0 || g.n == 0) return true;
  if (g.k > 0) return false;
  for (std::int64_t i = 0; i < g.m * g.n; ++i) c[i] = g.beta == 0.0 ? T(0) : static_cast<T>(g.beta) * c[i];
  return true;
}

// One problem, split over the pool into panels of rows of c (or of columns when c is wide).
template <typename T>
void gemm_one(const GemmShape& g, const T* a, const T* b, T* c) {
  const Problem whole = problem_of(g);
  const int threads = num_threads();
  const bool by_rows = g.m >= g.n;
  const std::int64_t extent = by_rows ? g.m : g.n;
  const std::int64_t panels = std::min<std::int64_t>(threads, (extent + kPanelAlign - 1) / kPanelAlign);
  if (panels < 2 || g.m * g.n * g.k < kThreadedWork) return blas(whole, a, b, c);
  const std::int64_t width = (extent + panels - 1) / panels;
  const std::int64_t step = (width + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
  parallel_for(panels, 1, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t panel = first; panel < last; ++panel) {
      const std::int64_t begin = panel * step, size = std::min(extent, begin + step) - begin;
      if (size <= 0) continue;
      Problem part = whole;
      if (by_rows) {
        part.m = size;
        blas(part, a + (g.transpose_a ? begin : begin * whole.lda), b, c + begin * whole.ldc);
      } else {
        part.n = size;
        blas(part, a, b + (g.transpose_b ? begin * whole.ldb : begin), c + begin);
      }
    }
  });
}

template <typename T>
void gemm_typed(const GemmShape& g, const T* a, const T* b, T* c) {
  single_threaded_blas();
  if (g.batch == 1) {
    if (!degenerate(g, c)) gemm_one<T>(g, a, b, c);
    return;
  }
  // A batch: whole problems per thread, enough of them per chunk to be worth a wake-up.
  const std::int64_t work = std::max<std::int64_t>(g.m * g.n * g.k, 1);
  parallel_for(g.batch, std::max<std::int64_t>(1, kThreadedWork / work), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      T* ci = c + i * g.stride_c;
      if (!degenerate(g, ci)) gemm_one<T>(g, a + i * g.stride_a, b + i * g.stride_b, ci);
    }
  });
}

}  // namespace

namespace {
// Below this many multiply-adds a bf16 GEMM stays emulated: oneDNN's call and the operands' rounded
// copies cost more than they save.
constexpr std::int64_t kBf16KernelWork = std::int64_t{1} << 15;

// -1 until first asked: then LOOM_CPU_BF16 (kernels, the default, or emulate); use_bf16_kernels sets it.
std::atomic<int> g_use_bf16_kernels{-1};

bool env_wants_bf16_kernels() {
  const char* value = std::getenv("LOOM_CPU_BF16");
  if (value == nullptr || *value == '\0') return true;
  const std::string_view text(value);
  LOOM_CHECK(text == "kernels" || text == "emulate", "environment variable LOOM_CPU_BF16='", excerpt(text),
             "' is not kernels or emulate");
  return text == "kernels";
}

bool bf16_kernel_for(const GemmShape& g) {
  return g.m > 0 && g.n > 0 && g.k > 0 && g.m * g.n * g.k * g.batch >= kBf16KernelWork && bf16_kernels();
}

// t's f32 values rounded to bf16 (round_to's rule) as bf16 bit patterns, in a workspace tensor.
Tensor bf16_copy(const Tensor& t) {
  Tensor bits = Tensor::empty(t.shape(), DType::bf16, t.device());
  cast(t, bits);
  return bits;
}

const std::uint16_t* bits_of(const Tensor& t) { return static_cast<const std::uint16_t*>(t.raw_data()); }

// bf16 operands, f32 accumulation, the result rounded to bf16 once (ops.h): oneDNN's bf16 kernel,
// or the operands widened to f32 (exact) and an f32 GEMM.
void gemm_bf16(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c) {
  MemoryCategoryScope scratch(MemoryCategory::workspace);
  auto widened = [](const Tensor& t) {
    Tensor wide = Tensor::empty(t.shape(), DType::f32, t.device());
    cast(t, wide);
    return wide;
  };
  Tensor wide_c = g.beta != 0 ? widened(c) : Tensor::empty(c.shape(), DType::f32, c.device());
  if (bf16_kernel_for(g)) {
    onednn::matmul_bf16(g, bits_of(a), bits_of(b), wide_c.data<float>());
  } else {
    const Tensor wide_a = widened(a), wide_b = widened(b);
    gemm_typed<float>(g, wide_a.data<float>(), wide_b.data<float>(), wide_c.data<float>());
  }
  cast(wide_c, c);
}
}  // namespace

bool bf16_kernels_supported() { return onednn::bf16_matmul_supported(); }
bool bf16_kernels() {
  int use = g_use_bf16_kernels.load(std::memory_order_relaxed);
  if (use < 0) g_use_bf16_kernels = use = env_wants_bf16_kernels() ? 1 : 0;
  return use == 1 && bf16_kernels_supported();
}
void use_bf16_kernels(bool use) { g_use_bf16_kernels = use ? 1 : 0; }

// f32 operands rounded to bf16 or f16, f32 accumulation into the f32 c (ops.h, GemmOperandScope):
// bf16 copies and oneDNN's bf16 kernel, or rounded f32 copies and an f32 GEMM.
void gemm_rounded_operands(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c, DType operands) {
  MemoryCategoryScope scratch(MemoryCategory::workspace);
  if (operands == DType::bf16 && bf16_kernel_for(g)) {
    const Tensor bits_a = bf16_copy(a), bits_b = bf16_copy(b);
    onednn::matmul_bf16(g, bits_of(bits_a), bits_of(bits_b), c.data<float>());
    return;
  }
  const auto rounded = [operands](const Tensor& t) {
    Tensor copy = Tensor::empty(t.shape(), DType::f32, t.device());
    round_to(t.data<float>(), copy.data<float>(), t.numel(), operands);
    return copy;
  };
  const Tensor rounded_a = rounded(a), rounded_b = rounded(b);
  gemm_typed<float>(g, rounded_a.data<float>(), rounded_b.data<float>(), c.data<float>());
}

void gemm(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c) {
  if (a.dtype() == DType::bf16)
    gemm_bf16(g, a, b, c);
  else if (a.dtype() == DType::f32)
    gemm_typed<float>(g, a.data<float>(), b.data<float>(), c.data<float>());
  else
    gemm_typed<double>(g, a.data<double>(), b.data<double>(), c.data<double>());
}

std::shared_ptr<const void> pack_gemm_right(const GemmShape& g, const Tensor& b) {
  return onednn::pack_right_f32(g, b.data<float>());
}

void gemm_packed_right(const void* packed, const Tensor& a, Tensor& c) {
  onednn::matmul_packed_f32(*static_cast<const onednn::PackedRight*>(packed), a.data<float>(), c.data<float>());
}

void gemm_pointers(const GemmShape& g, DType dtype, const std::vector<const void*>& a,
                   const std::vector<const void*>& b, const std::vector<void*>& c) {
  GemmShape one = g;
  one.batch = 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (dtype == DType::f32)
      gemm_typed<float>(one, static_cast<const float*>(a[i]), static_cast<const float*>(b[i]),
                        static_cast<float*>(c[i]));
    else
      gemm_typed<double>(one, static_cast<const double*>(a[i]), static_cast<const double*>(b[i]),
                         static_cast<double*>(c[i]));
  }
}

}  // namespace loom::cpu
