// The CPU's bf16 GEMMs on oneDNN's bf16 kernels (ops.h cpu_bf16_kernels), against the product in
// double of the same bf16-rounded operands. Skips the whole executable (exit 77, ctest's skip) where
// the CPU lacks AVX-512 BF16 or loom was built without oneDNN; the emulated path is tested in
// gemm_test.cpp on every machine.
//
// Tolerance: both paths multiply bf16 values exactly in f32 (8 + 8 significand bits fit in 24) and
// differ only in how the f32 sums are ordered and rounded. Any order of k additions is within
// k·u·Σ|a_ip·b_pj| of the exact sum (u = 2^-24, the classic bound for recursive summation, and
// blocked or pairwise orders are tighter), plus one rounding of alpha·sum + beta·c: the bound
// checked is (k + 2)·u·(|alpha|·Σ|a·b| + |beta·c|) per element.
#include <catch2/catch.hpp>

#include <cmath>

#include <loom/core/ops.h>
#include <loom/core/threads.h>

#include "bf16_kernels.h"
#include "reference.h"

using namespace loom;

namespace {

const test::SkipWithoutBf16Kernels skip_without_bf16_kernels_at_start;

// max over elements of |got - want| / bound, bound as in the header (<= 1 passes).
double worst_against_bound(const std::vector<double>& got, const std::vector<double>& a, bool ta,
                           const std::vector<double>& b, bool tb, const std::vector<double>& c, long m, long n, long k,
                           double alpha, double beta) {
  std::vector<double> abs_a(a.size()), abs_b(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) abs_a[i] = std::abs(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) abs_b[i] = std::abs(b[i]);
  const std::vector<double> want = test::naive_gemm(a, ta, b, tb, c, m, n, k, alpha, beta);
  const std::vector<double> size = test::naive_gemm(abs_a, ta, abs_b, tb, std::vector<double>(c.size(), 0), m, n, k, 1, 0);
  const double u = std::ldexp(1.0, -24);
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double bound = (k + 2) * u * (std::abs(alpha) * size[i] + std::abs(beta * c[i])) + 1e-30;
    worst = std::max(worst, std::abs(got[i] - want[i]) / bound);
  }
  return worst;
}

}  // namespace

TEST_CASE("bf16 kernels: f32 gemm under GemmOperandScope(bf16) equals the double product of the rounded operands",
          "[gemm][bf16]") {
  REQUIRE(ops::cpu_bf16_kernels());
  set_num_threads(2);
  // Shapes of a transformer's Linear and attention and a ResNet 1x1 convolution's GEMM.
  struct Case {
    long m, n, k;
    double alpha, beta;
  };
  for (const Case& s : {Case{64, 768, 768, 1.0, 0.0}, Case{128, 96, 3072, 1.0, 1.0}, Case{37, 45, 301, 0.5, -1.5}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        INFO(s.m << "x" << s.n << "x" << s.k << " ta " << ta << " tb " << tb << " alpha " << s.alpha << " beta " << s.beta);
        const Tensor a = test::random_tensor(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, DType::f32, 11);
        const Tensor b = test::random_tensor(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, DType::f32, 12);
        const Tensor c = test::random_tensor({s.m, s.n}, DType::f32, 13);
        Tensor kernel = c.clone(), emulated = c.clone(), exact = c.clone();
        {
          const ops::GemmOperandScope math(DType::bf16);
          ops::gemm(a, ta, b, tb, kernel, s.alpha, s.beta);
          ops::use_cpu_bf16_kernels(false);
          ops::gemm(a, ta, b, tb, emulated, s.alpha, s.beta);
          ops::use_cpu_bf16_kernels(true);
        }
        ops::gemm(a, ta, b, tb, exact, s.alpha, s.beta);
        const auto ra = test::bf16_rounded(a), rb = test::bf16_rounded(b), cv = c.to_double_vector();
        CHECK(worst_against_bound(kernel.to_double_vector(), ra, ta, rb, tb, cv, s.m, s.n, s.k, s.alpha, s.beta) <= 1);
        CHECK(worst_against_bound(emulated.to_double_vector(), ra, ta, rb, tb, cv, s.m, s.n, s.k, s.alpha, s.beta) <= 1);
        CHECK(ops::max_abs_error(kernel, exact) > 1e-3);  // the operands were rounded
      }
}

TEST_CASE("bf16 kernels: strided batches (attention's shapes), every transpose", "[gemm][bf16]") {
  const long batch = 12, m = 64, n = 64, k = 64;  // heads x sequence x head width
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("ta " << ta << " tb " << tb);
      const Tensor a = test::random_tensor(ta ? Shape{batch, k, m} : Shape{batch, m, k}, DType::f32, 21);
      const Tensor b = test::random_tensor(tb ? Shape{batch, n, k} : Shape{batch, k, n}, DType::f32, 22);
      const Tensor c = test::random_tensor({batch, m, n}, DType::f32, 23);
      Tensor got = c.clone();
      {
        const ops::GemmOperandScope math(DType::bf16);
        ops::gemm_strided_batched(a, ta, b, tb, got, 0.125, 1.0);
      }
      const auto ra = test::bf16_rounded(a), rb = test::bf16_rounded(b), cv = c.to_double_vector(), gv = got.to_double_vector();
      double worst = 0;
      for (long i = 0; i < batch; ++i) {
        const auto slice = [i](const std::vector<double>& v, long size) {
          return std::vector<double>(v.begin() + i * size, v.begin() + (i + 1) * size);
        };
        worst = std::max(worst, worst_against_bound(slice(gv, m * n), slice(ra, m * k), ta, slice(rb, k * n), tb,
                                                    slice(cv, m * n), m, n, k, 0.125, 1.0));
      }
      CHECK(worst <= 1);
    }
}

// bf16 tensors: the f32 result of the kernel rounded to bf16 once, so within bf16's unit roundoff
// (2^-8 relative: 8 significand bits) of the double product plus the f32 sums' bound (|a|, |b| <= 1).
TEST_CASE("bf16 kernels: gemm of bf16 tensors rounds the f32 result once", "[gemm][bf16]") {
  const long m = 48, n = 80, k = 512;
  Tensor a = Tensor::empty({m, k}, DType::bf16), b = Tensor::empty({k, n}, DType::bf16), c = Tensor::empty({m, n}, DType::bf16);
  ops::cast(test::random_tensor({m, k}, DType::f32, 31), a);
  ops::cast(test::random_tensor({k, n}, DType::f32, 32), b);
  ops::gemm(a, false, b, false, c);
  const std::vector<double> want = test::naive_gemm(a.to_double_vector(), false, b.to_double_vector(), false,
                                                    std::vector<double>(m * n, 0), m, n, k, 1, 0);
  const std::vector<double> got = c.to_double_vector();
  for (std::size_t i = 0; i < got.size(); ++i)
    REQUIRE(std::abs(got[i] - want[i]) <= std::ldexp(std::abs(want[i]), -8) * 1.01 + (k + 2) * std::ldexp(1.0, -24) * k);
}
