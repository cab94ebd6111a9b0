// CPU matrix multiply: straight to OpenBLAS (cblas_?gemm), which is what Eigen would call with
// EIGEN_USE_BLAS anyway; going direct avoids an expression-template layer on the hot path.
#include <cstdlib>
#include <mutex>

#include <cblas.h>

#include <loom/core/threads.h>

#include "backend.h"

namespace loom::cpu {

namespace {

// BLAS threads follow loom's setting (cores / local ranks by default) from the first GEMM on.
void configure_threads_once() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(num_threads()); });
}

template <typename T>
void gemm_one(const GemmShape& g, const T* a, const T* b, T* c);

template <>
void gemm_one<float>(const GemmShape& g, const float* a, const float* b, float* c) {
  const auto lda = static_cast<int>(g.transpose_a ? g.m : g.k);
  const auto ldb = static_cast<int>(g.transpose_b ? g.k : g.n);
  cblas_sgemm(CblasRowMajor, g.transpose_a ? CblasTrans : CblasNoTrans, g.transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), static_cast<float>(g.alpha), a,
              std::max(lda, 1), b, std::max(ldb, 1), static_cast<float>(g.beta), c, std::max(static_cast<int>(g.n), 1));
}

template <>
void gemm_one<double>(const GemmShape& g, const double* a, const double* b, double* c) {
  const auto lda = static_cast<int>(g.transpose_a ? g.m : g.k);
  const auto ldb = static_cast<int>(g.transpose_b ? g.k : g.n);
  cblas_dgemm(CblasRowMajor, g.transpose_a ? CblasTrans : CblasNoTrans, g.transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), g.alpha, a, std::max(lda, 1), b,
              std::max(ldb, 1), g.beta, c, std::max(static_cast<int>(g.n), 1));
}

// k == 0 means c = beta * c (BLAS implementations differ on degenerate sizes; be explicit).
template <typename T>
bool degenerate(const GemmShape& g, T* c) {
  if (g.m == 0 || g.n == 0) return true;
  if (g.k > 0) return false;
  for (std::int64_t i = 0; i < g.m * g.n; ++i) c[i] = g.beta == 0.0 ? T(0) : static_cast<T>(g.beta) * c[i];
  return true;
}

template <typename T>
void gemm_typed(const GemmShape& g, const T* a, const T* b, T* c) {
  configure_threads_once();
  for (std::int64_t i = 0; i < g.batch; ++i) {
    T* ci = c + i * g.stride_c;
    if (!degenerate(g, ci)) gemm_one<T>(g, a + i * g.stride_a, b + i * g.stride_b, ci);
  }
}

}  // namespace

void gemm(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c) {
  if (a.dtype() == DType::f32)
    gemm_typed<float>(g, a.data<float>(), b.data<float>(), c.data<float>());
  else
    gemm_typed<double>(g, a.data<double>(), b.data<double>(), c.data<double>());
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

void* allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = std::aligned_alloc(64, bytes);
  LOOM_CHECK(p != nullptr, "out of host memory allocating ", bytes, " bytes");
  return p;
}

void deallocate(void* data, std::size_t /*bytes*/) { std::free(data); }

}  // namespace loom::cpu
