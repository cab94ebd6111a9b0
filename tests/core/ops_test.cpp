// Element-wise ops, bias, reductions and softmax against naive double-precision loops.
#include <catch2/catch.hpp>

#include <cmath>

#include <loom/core/ops.h>

#include "reference.h"

using namespace loom;

TEST_CASE("element-wise ops", "[ops]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor a = test::random_tensor({4, 5}, dtype, 1), b = test::random_tensor({4, 5}, dtype, 2);
    const auto va = a.to_double_vector(), vb = b.to_double_vector();
    Tensor out = Tensor::empty({4, 5}, dtype);
    const double tol = dtype == DType::f32 ? 1e-6 : 1e-15;
    auto expect = [&](auto f) {
      std::vector<double> e(va.size());
      for (std::size_t i = 0; i < va.size(); ++i) e[i] = f(va[i], vb[i]);
      return e;
    };
    ops::add(a, b, out);
    CHECK(test::max_abs_diff(out.to_double_vector(), expect([](double x, double y) { return x + y; })) < tol);
    ops::sub(a, b, out);
    CHECK(test::max_abs_diff(out.to_double_vector(), expect([](double x, double y) { return x - y; })) < tol);
    ops::mul(a, b, out);
    CHECK(test::max_abs_diff(out.to_double_vector(), expect([](double x, double y) { return x * y; })) < tol);
    ops::add_scaled(a, 2.0, b, -3.0, out);
    CHECK(test::max_abs_diff(out.to_double_vector(), expect([](double x, double y) { return 2 * x - 3 * y; })) < 10 * tol);
    Tensor y = b.clone();
    ops::axpy(0.25, a, y);
    CHECK(test::max_abs_diff(y.to_double_vector(), expect([](double x, double z) { return z + 0.25 * x; })) < tol);
    ops::scale(y, 4.0);
    CHECK(test::max_abs_diff(y.to_double_vector(), expect([](double x, double z) { return 4 * (z + 0.25 * x); })) < 10 * tol);
    double dot = 0, squares = 0;
    for (std::size_t i = 0; i < va.size(); ++i) {
      dot += va[i] * vb[i];
      squares += va[i] * va[i];
    }
    CHECK(ops::dot(a, b) == Approx(dot).epsilon(1e-12));
    CHECK(ops::sum_of_squares(a) == Approx(squares).epsilon(1e-12));
    ops::fill(out, 3.5);
    CHECK(out.to_double_vector() == std::vector<double>(20, 3.5));
  }
}

TEST_CASE("element-wise ops reject mismatches with a clear message", "[ops][errors]") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2}), out = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH(ops::add(a, b, out), Catch::Contains("add: shape mismatch [2, 3] vs [3, 2]"));
  Tensor d = Tensor::zeros({2, 3}, DType::f64);
  CHECK_THROWS_WITH(ops::mul(a, d, out), Catch::Contains("mul: dtype mismatch"));
  CHECK_THROWS_WITH(ops::axpy(1.0, a, b), Catch::Contains("axpy: shape mismatch"));
  CHECK_THROWS_WITH(ops::add(Tensor(), a, out), Catch::Contains("undefined tensor"));
  Tensor bias = Tensor::zeros({4});
  CHECK_THROWS_WITH(ops::bias_add(a, bias), Catch::Contains("bias_add: bias [4] does not match the last dim of [2, 3]"));
}

TEST_CASE("bias add and bias gradient", "[ops]") {
  Tensor x = test::random_tensor({2, 3, 4}, DType::f64, 5);
  Tensor bias = test::random_tensor({4}, DType::f64, 6);
  const auto vx = x.to_double_vector(), vb = bias.to_double_vector();
  ops::bias_add(x, bias);
  const auto out = x.to_double_vector();
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(vx[i] + vb[i % 4]).epsilon(1e-15));
  Tensor grad_bias = Tensor::full({4}, 1.0, DType::f64);  // accumulates
  ops::bias_grad(x, grad_bias);
  for (int j = 0; j < 4; ++j) {
    double total = 1.0;
    for (int r = 0; r < 6; ++r) total += out[r * 4 + j];
    CHECK(grad_bias.to_double_vector()[j] == Approx(total).epsilon(1e-14));
  }
}

TEST_CASE("sum, mean and max along each dim", "[ops]") {
  Tensor x = test::random_tensor({3, 4, 5}, DType::f64, 7);
  const auto v = x.to_double_vector();
  auto at = [&](int i, int j, int k) { return v[(i * 4 + j) * 5 + k]; };
  for (int dim = 0; dim < 3; ++dim) {
    Tensor indices;
    const auto s = ops::sum(x, dim).to_double_vector();
    const auto m = ops::mean(x, dim - 3).to_double_vector();  // negative dims too
    const auto mx = ops::max(x, dim, &indices).to_double_vector();
    const auto idx = indices.to_double_vector();
    const int sizes[3] = {3, 4, 5};
    std::size_t out = 0;
    for (int i = 0; i < (dim == 0 ? 1 : 3); ++i)
      for (int j = 0; j < (dim == 1 ? 1 : 4); ++j)
        for (int k = 0; k < (dim == 2 ? 1 : 5); ++k, ++out) {
          double total = 0, best = -1e300;
          int best_at = -1;
          for (int l = 0; l < sizes[dim]; ++l) {
            const double value = at(dim == 0 ? l : i, dim == 1 ? l : j, dim == 2 ? l : k);
            total += value;
            if (value > best) {
              best = value;
              best_at = l;
            }
          }
          CHECK(s[out] == Approx(total).epsilon(1e-14));
          CHECK(m[out] == Approx(total / sizes[dim]).epsilon(1e-14));
          CHECK(mx[out] == best);
          CHECK(idx[out] == best_at);
        }
    CHECK(out == s.size());
  }
  CHECK(ops::sum(x, 1).shape() == Shape{3, 5});
  CHECK_THROWS_WITH(ops::sum(x, 3), Catch::Contains("dimension 3 out of range"));
  CHECK(ops::sum(Tensor::zeros({2, 0}), 1).to_double_vector() == std::vector<double>{0, 0});
}

TEST_CASE("softmax, log-softmax and softmax backward", "[ops]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor x = test::random_tensor({6, 9}, dtype, 8, -20, 20);
    Tensor y = Tensor::empty({6, 9}, dtype), logy = Tensor::empty({6, 9}, dtype);
    ops::softmax(x, y);
    ops::log_softmax(x, logy);
    Tensor dy = test::random_tensor({6, 9}, dtype, 9);
    Tensor dx = Tensor::empty({6, 9}, dtype);
    ops::softmax_backward(y, dy, dx);
    const auto vx = x.to_double_vector(), vy = y.to_double_vector(), vl = logy.to_double_vector();
    const auto vdy = dy.to_double_vector(), vdx = dx.to_double_vector();
    const double tol = dtype == DType::f32 ? 1e-6 : 1e-14;
    for (int r = 0; r < 6; ++r) {
      double top = -1e300, total = 0, weighted = 0;
      for (int j = 0; j < 9; ++j) top = std::max(top, vx[r * 9 + j]);
      for (int j = 0; j < 9; ++j) total += std::exp(vx[r * 9 + j] - top);
      for (int j = 0; j < 9; ++j) weighted += vdy[r * 9 + j] * std::exp(vx[r * 9 + j] - top) / total;
      for (int j = 0; j < 9; ++j) {
        const double p = std::exp(vx[r * 9 + j] - top) / total;
        CHECK(std::abs(vy[r * 9 + j] - p) < tol);
        CHECK(std::abs(vl[r * 9 + j] - (vx[r * 9 + j] - top - std::log(total))) < 10 * tol);
        CHECK(std::abs(vdx[r * 9 + j] - p * (vdy[r * 9 + j] - weighted)) < tol);
      }
    }
  }
}

// add_sum_of_squares keeps the total on the tensors' device (the optimizer's gradient norm reads
// it once per step): on the CPU and the sim device, the sum of squares in double, accumulated over
// calls, against a sum written out here; a total of the wrong kind is a clear error.
TEST_CASE("add_sum_of_squares accumulates on the device", "[ops]") {
  for (const Device device : {Device::cpu(), Device::sim()}) {
    INFO(device.str());
    const Tensor a = Tensor::from_vector(std::vector<float>{1.5f, -2.0f, 0.25f}, Shape{3}).to(device);
    const Tensor b = Tensor::from_vector(std::vector<double>{3.0, 1e-3}, Shape{2}).to(device);
    Tensor total = Tensor::zeros({1}, DType::f64, device);
    ops::add_sum_of_squares(a, total);
    ops::add_sum_of_squares(b, total);
    CHECK(total.item() == 1.5 * 1.5 + 2.0 * 2.0 + 0.25 * 0.25 + 3.0 * 3.0 + 1e-3 * 1e-3);
    Tensor wrong = Tensor::zeros({1}, DType::f32, device);
    CHECK_THROWS_WITH(ops::add_sum_of_squares(a, wrong), Catch::Contains("total must be one f64 on " + device.str()));
  }
}
