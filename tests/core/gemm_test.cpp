// gemm in all four transpose combinations, with alpha/beta, batched and strided-batched,
// against a naive double-precision product.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include <loom/core/ops.h>
#include <loom/core/threads.h>

#include "reference.h"

using namespace loom;

TEST_CASE("gemm: all transposes, alpha and beta, f32 and f64", "[gemm]") {
  const long m = 37, n = 23, k = 41;
  for (DType dtype : {DType::f32, DType::f64})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = test::random_tensor(ta ? Shape{k, m} : Shape{m, k}, dtype, 1);
        Tensor b = test::random_tensor(tb ? Shape{n, k} : Shape{k, n}, dtype, 2);
        Tensor c = test::random_tensor({m, n}, dtype, 3);
        const auto expected = test::naive_gemm(a.to_double_vector(), ta, b.to_double_vector(), tb,
                                               c.to_double_vector(), m, n, k, 0.5, -1.5);
        ops::gemm(a, ta, b, tb, c, 0.5, -1.5);
        const double tolerance = dtype == DType::f32 ? 2e-5 : 1e-12;
        INFO("dtype " << dtype_name(dtype) << " ta " << ta << " tb " << tb);
        CHECK(test::max_abs_diff(c.to_double_vector(), expected) < tolerance);
      }
}

// The bf16 reference: the product of the bf16 values in double, times alpha, plus beta c, rounded to
// bf16 once. loom sums in f32, so it may sit one bf16 step (2^-8 relative) from it, plus the f32
// sum's own error where terms cancel (k 2^-24 times the sum of the terms' magnitudes).
TEST_CASE("gemm in bf16: f32 accumulation, one rounding, on the CPU and the sim device", "[gemm][bf16]") {
  const long m = 37, n = 29, k = 300, batch = 3;
  const auto magnitudes = [](std::vector<double> v) {
    for (double& x : v) x = std::abs(x);
    return v;
  };
  for (Device device : {Device::cpu(), Device::sim()})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = test::random_tensor(ta ? Shape{batch, k, m} : Shape{batch, m, k}, DType::f32, 1).to(DType::bf16);
        Tensor b = test::random_tensor(tb ? Shape{batch, n, k} : Shape{batch, k, n}, DType::f32, 2).to(DType::bf16);
        Tensor c = test::random_tensor({batch, m, n}, DType::f32, 3).to(DType::bf16);
        const std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector(), cv = c.to_double_vector();
        Tensor on = c.to(device);
        ops::gemm_strided_batched(a.to(device), ta, b.to(device), tb, on, 0.5, -1.5);
        const std::vector<double> got = on.to(Device::cpu()).to_double_vector();
        INFO(device.str() << " ta " << ta << " tb " << tb);
        long off_by_more_than_a_step = 0;
        for (long i = 0; i < batch; ++i) {
          const auto slice = [&](const std::vector<double>& v, long size) {
            return std::vector<double>(v.begin() + i * size, v.begin() + (i + 1) * size);
          };
          const auto exact = test::naive_gemm(slice(av, m * k), ta, slice(bv, k * n), tb, slice(cv, m * n), m, n, k, 0.5, -1.5);
          const auto size = test::naive_gemm(magnitudes(slice(av, m * k)), ta, magnitudes(slice(bv, k * n)), tb,
                                             magnitudes(slice(cv, m * n)), m, n, k, 0.5, 1.5);
          const std::vector<double> expected = Tensor::from_vector(exact, {m, n}).to(DType::bf16).to_double_vector();
          for (long j = 0; j < m * n; ++j) {
            const double step = std::ldexp(std::abs(expected[j]), -7);  // bf16 keeps 8 significand bits
            const double error = std::abs(got[i * m * n + j] - expected[j]);
            CHECK(error <= step + std::ldexp(static_cast<double>(k) * size[j], -24));
            off_by_more_than_a_step += error > step;
          }
        }
        CHECK(off_by_more_than_a_step <= batch * m * n / 100);  // cancellation is rare
      }
  // 2-D, and bf16 values stay bf16: the f32 product of bf16-exact operands rounded once.
  Tensor a = Tensor::from_vector(std::vector<double>{1.5, -2.0, 0.25, 3.0}, {2, 2}).to(DType::bf16);
  Tensor c = Tensor::empty({2, 2}, DType::bf16);
  ops::gemm(a, false, a, false, c);
  CHECK(c.dtype() == DType::bf16);
  CHECK(c.to_double_vector() == std::vector<double>{1.5 * 1.5 - 2.0 * 0.25, 1.5 * -2.0 - 2.0 * 3.0,
                                                    0.25 * 1.5 + 3.0 * 0.25, 0.25 * -2.0 + 3.0 * 3.0});
}

// Under ops::GemmOperandScope(bf16 or f16) an f32 gemm rounds its operands to that type and
// accumulates in f32 into f32: against the double product of the rounded operands it is within
// the f32 sum's error, it is not the exact f32 product (the operands here are not 16-bit values),
// GemmOperandScope(f32) inside restores exact f32, and the inputs are left unchanged. bf16 runs
// emulated (rounded f32 copies, an f32 GEMM) and, where the CPU has them, on oneDNN's bf16 kernels.
TEST_CASE("gemm under GemmOperandScope: bf16 or f16 operands, f32 accumulation and result", "[gemm][bf16][f16]") {
  const long m = 19, n = 23, k = 257, batch = 2;
  for (bool kernels : {false, true})
  for (DType operands : {DType::bf16, DType::f16})
  for (Device device : {Device::cpu(), Device::sim()})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        if (kernels && (operands != DType::bf16 || !ops::cpu_bf16_kernels_supported())) continue;
        ops::use_cpu_bf16_kernels(kernels);
        INFO(dtype_name(operands) << " " << device.str() << " ta " << ta << " tb " << tb << " kernels " << kernels);
        const auto rounded = [operands](const Tensor& t) {
          Tensor r = t.clone();
          ops::round_to_(r, operands);
          return r.to_double_vector();
        };
        const Tensor a = test::random_tensor(ta ? Shape{batch, k, m} : Shape{batch, m, k}, DType::f32, 4);
        const Tensor b = test::random_tensor(tb ? Shape{batch, n, k} : Shape{batch, k, n}, DType::f32, 5);
        const Tensor c = test::random_tensor({batch, m, n}, DType::f32, 6);
        const std::vector<double> a_before = a.to_double_vector();
        const std::vector<double> ra = rounded(a), rb = rounded(b), cv = c.to_double_vector();
        Tensor mixed = c.clone().to(device), exact = c.clone().to(device);
        {
          const ops::GemmOperandScope math(operands);
          CHECK(ops::gemm_operand_dtype() == operands);
          ops::gemm_strided_batched(a.to(device), ta, b.to(device), tb, mixed, 0.5, -1.5);
          const ops::GemmOperandScope off(DType::f32);
          ops::gemm_strided_batched(a.to(device), ta, b.to(device), tb, exact, 0.5, -1.5);
        }
        CHECK(ops::gemm_operand_dtype() == DType::f32);
        CHECK(a.to_double_vector() == a_before);
        const std::vector<double> got = mixed.to(Device::cpu()).to_double_vector();
        const std::vector<double> plain = exact.to(Device::cpu()).to_double_vector();
        double worst = 0, moved = 0;
        for (long i = 0; i < batch; ++i) {
          const auto slice = [&](const std::vector<double>& v, long size) {
            return std::vector<double>(v.begin() + i * size, v.begin() + (i + 1) * size);
          };
          const auto want = test::naive_gemm(slice(ra, m * k), ta, slice(rb, k * n), tb, slice(cv, m * n), m, n, k, 0.5, -1.5);
          for (long j = 0; j < m * n; ++j) {
            worst = std::max(worst, std::abs(got[i * m * n + j] - want[j]));
            moved = std::max(moved, std::abs(plain[i * m * n + j] - got[i * m * n + j]));
          }
        }
        CHECK(worst < 2e-5);  // f32 accumulation of k = 257 products of magnitude < 1
        CHECK(moved > (operands == DType::bf16 ? 1e-3 : 1e-4));  // the rounding of the operands shows (f16: 3 bits finer)
      }
  ops::use_cpu_bf16_kernels(true);
}

TEST_CASE("gemm split over 3 threads: row and column panels, all transposes, batches", "[gemm]") {
  // Large enough to be split into panels (tall: rows, wide: columns; 3 panels of 32-multiples
  // leave a short last panel), compared with the naive double product.
  set_num_threads(3);
  for (const auto& [m, n, k] : {std::tuple{203L, 75L, 190L}, std::tuple{70L, 301L, 150L}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = test::random_tensor(ta ? Shape{k, m} : Shape{m, k}, DType::f64, 1);
        Tensor b = test::random_tensor(tb ? Shape{n, k} : Shape{k, n}, DType::f64, 2);
        Tensor c = test::random_tensor({m, n}, DType::f64, 3);
        const auto expected = test::naive_gemm(a.to_double_vector(), ta, b.to_double_vector(), tb,
                                               c.to_double_vector(), m, n, k, 0.5, -1.5);
        ops::gemm(a, ta, b, tb, c, 0.5, -1.5);
        INFO("m " << m << " n " << n << " ta " << ta << " tb " << tb);
        CHECK(test::max_abs_diff(c.to_double_vector(), expected) < 1e-11);
      }
  // A batch of many small problems runs whole problems per thread.
  const long batch = 128, m = 40, n = 30, k = 50;
  Tensor a = test::random_tensor({batch, m, k}, DType::f64, 4), b = test::random_tensor({batch, n, k}, DType::f64, 5);
  Tensor c = Tensor::zeros({batch, m, n}, DType::f64);
  ops::gemm_strided_batched(a, false, b, true, c);
  const auto av = a.to_double_vector(), bv = b.to_double_vector(), cv = c.to_double_vector();
  double worst = 0;
  for (long i = 0; i < batch; ++i) {
    const auto expected = test::naive_gemm({av.begin() + i * m * k, av.begin() + (i + 1) * m * k}, false,
                                           {bv.begin() + i * n * k, bv.begin() + (i + 1) * n * k}, true,
                                           std::vector<double>(m * n, 0.0), m, n, k, 1.0, 0.0);
    worst = std::max(worst, test::max_abs_diff({cv.begin() + i * m * n, cv.begin() + (i + 1) * m * n}, expected));
  }
  CHECK(worst < 1e-11);
  set_num_threads(1);
}

// RepeatedGemm: one b for many a. Large enough (2^20 multiply-adds) f32 products on a CPU with
// oneDNN run on b reordered once; the rest (small, f64, under a rounding scope) is gemm itself.
TEST_CASE("RepeatedGemm: a op(b) + beta c for many a, packed or not, against the double product", "[gemm]") {
  const long m = 16, k = 256, n = 320;  // 1.3 M multiply-adds
  for (DType dtype : {DType::f32, DType::f64})
    for (bool tb : {false, true})
      for (double beta : {0.0, 1.0}) {
        INFO("dtype " << dtype_name(dtype) << " tb " << tb << " beta " << beta);
        const Tensor b = test::random_tensor(tb ? Shape{n, k} : Shape{k, n}, dtype, 2);
        const ops::RepeatedGemm product(b, tb, m, beta);
        if (dtype == DType::f64) CHECK_FALSE(product.packed());
        // The build decides, not the product: with oneDNN every f32 product here is packed.
        if (dtype == DType::f32 && LOOM_HAVE_ONEDNN) CHECK(product.packed());
        if (dtype == DType::f32 && !LOOM_HAVE_ONEDNN) WARN("SKIPPED packed products: this loom has no oneDNN");
        for (std::uint64_t step = 0; step < 3; ++step) {  // several a, one b
          const Tensor a = test::random_tensor({m, k}, dtype, 10 + step);
          Tensor c = test::random_tensor({m, n}, dtype, 20 + step);
          const auto expected = test::naive_gemm(a.to_double_vector(), false, b.to_double_vector(), tb,
                                                 c.to_double_vector(), m, n, k, 1.0, beta);
          product(a, c);
          CHECK(test::max_abs_diff(c.to_double_vector(), expected) < (dtype == DType::f32 ? 1e-4 : 1e-12));
        }
      }
  const Tensor b = test::random_tensor({8, 4}, DType::f32, 2);
  CHECK_FALSE(ops::RepeatedGemm(b, false, 3, 0.0).packed());  // small: gemm itself
  {
    const ops::GemmOperandScope rounding(DType::bf16);
    CHECK_FALSE(ops::RepeatedGemm(test::random_tensor({k, n}, DType::f32, 2), false, m, 0.0).packed());
  }
  Tensor a = test::random_tensor({3, 5}, DType::f32, 1), c = Tensor::zeros({3, 4});
  CHECK_THROWS_WITH(ops::RepeatedGemm(b, false, 3, 0.0)(a, c), Catch::Contains("do not compose"));
}

TEST_CASE("gemm: degenerate sizes", "[gemm]") {
  Tensor a = Tensor::zeros({3, 0}), b = Tensor::zeros({0, 2});
  Tensor c = Tensor::full({3, 2}, 4.0);
  ops::gemm(a, false, b, false, c, 1.0, 0.5);  // k = 0: c = beta c
  CHECK(c.to_double_vector() == std::vector<double>(6, 2.0));
  ops::gemm(a, false, b, false, c, 1.0, 0.0);
  CHECK(c.to_double_vector() == std::vector<double>(6, 0.0));
  Tensor e = Tensor::zeros({0, 2});
  ops::gemm(Tensor::zeros({0, 3}), false, Tensor::zeros({3, 2}), false, e);
  CHECK(e.numel() == 0);
}

TEST_CASE("matmul allocates the product", "[gemm]") {
  Tensor a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2});
  CHECK(ops::matmul(a, b).to_double_vector() == std::vector<double>{4, 5, 10, 11});
  CHECK(ops::matmul(a, a, false, true).to_double_vector() == std::vector<double>{14, 32, 32, 77});
}

TEST_CASE("strided-batched and pointer-batched gemm", "[gemm]") {
  const long batch = 5, m = 8, n = 6, k = 7;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = test::random_tensor(ta ? Shape{batch, k, m} : Shape{batch, m, k}, DType::f64, 10);
      Tensor b = test::random_tensor(tb ? Shape{batch, n, k} : Shape{batch, k, n}, DType::f64, 11);
      Tensor c = test::random_tensor({batch, m, n}, DType::f64, 12);
      Tensor c2 = c.clone();
      std::vector<double> expected;
      for (long i = 0; i < batch; ++i) {
        auto part = test::naive_gemm(a.slice(i, i + 1).to_double_vector(), ta, b.slice(i, i + 1).to_double_vector(),
                                     tb, c.slice(i, i + 1).to_double_vector(), m, n, k, 2.0, 1.0);
        expected.insert(expected.end(), part.begin(), part.end());
      }
      ops::gemm_strided_batched(a, ta, b, tb, c, 2.0, 1.0);
      CHECK(test::max_abs_diff(c.to_double_vector(), expected) < 1e-12);
      std::vector<Tensor> as, bs, cs;
      for (long i = 0; i < batch; ++i) {
        as.push_back(a.slice(i, i + 1).reshape({a.size(1), a.size(2)}));
        bs.push_back(b.slice(i, i + 1).reshape({b.size(1), b.size(2)}));
        cs.push_back(c2.slice(i, i + 1).reshape({m, n}));
      }
      ops::gemm_batched(as, ta, bs, tb, cs, 2.0, 1.0);
      CHECK(test::max_abs_diff(c2.to_double_vector(), expected) < 1e-12);
    }
}

TEST_CASE("gemm: clear errors for bad shapes, dtypes and ranks", "[gemm][errors]") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5}), c = Tensor::zeros({2, 5});
  CHECK_THROWS_WITH(ops::gemm(a, false, b, false, c), Catch::Contains("shapes do not compose") &&
                                                          Catch::Contains("[2, 3]") && Catch::Contains("[4, 5]"));
  Tensor d = Tensor::zeros({3, 5}, DType::f64);
  CHECK_THROWS_WITH(ops::gemm(a, false, d, false, c), Catch::Contains("dtype mismatch (f32 and f64)"));
  Tensor i = Tensor::zeros({2, 3}, DType::i32);
  CHECK_THROWS_WITH(ops::gemm(i, false, i, true, i), Catch::Contains("expected an f32, f64 or bf16 tensor"));
  Tensor v = Tensor::zeros({3});
  CHECK_THROWS_WITH(ops::gemm(a, false, v, false, c), Catch::Contains("expected 2-D tensors"));
  Tensor x = Tensor::zeros({2, 2, 2});
  Tensor y = Tensor::zeros({3, 2, 2});
  CHECK_THROWS_WITH(ops::gemm_strided_batched(x, false, y, false, x), Catch::Contains("batch sizes differ"));
}
