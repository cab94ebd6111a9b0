// XLNet's two-stream relative attention against an independent PyTorch implementation (XLNet's
// einsums and Transformer-XL's rel_shift trick, tests/layers/reference/xlnet.py), f64 finite
// differences with dropout and the split backward, and the permutation masks checked directly:
// no output may depend on what its stream must not see.
#include <catch2/catch.hpp>

#include <cmath>

#include <loom/core/ops.h>
#include <loom/layers/relative_attention.h>

#include "expect.h"
#include "gradcheck.h"
#include "xlnet_expect.h"

using namespace loom;

namespace {

Tensor ranks(DType dtype = DType::f32) {
  return Tensor::from_vector<double>({2, 0, 4, 1, 3, 0, 1, 2, 3, 4}, Shape{2, 5}).to(dtype);
}

}  // namespace

TEST_CASE("relative sinusoids: distance T-1-p, sin half then cos half") {
  const Tensor r = relative_sinusoids(4, 6, DType::f64);
  REQUIRE(r.shape() == (Shape{7, 6}));
  const auto values = r.to_double_vector();
  for (std::int64_t p = 0; p < 7; ++p)
    for (std::int64_t k = 0; k < 3; ++k) {
      const double angle = static_cast<double>(3 - p) / std::pow(10000.0, 2.0 * static_cast<double>(k) / 6.0);
      CHECK(values[static_cast<std::size_t>(p * 6 + k)] == Approx(std::sin(angle)).margin(1e-12));
      CHECK(values[static_cast<std::size_t>(p * 6 + 3 + k)] == Approx(std::cos(angle)).margin(1e-12));
    }
}

TEST_CASE("two-stream relative attention matches PyTorch") {
  const std::int64_t B = 2, T = 5, E = 16, H = 4;
  TwoStreamRelativeAttention attn(E, H);
  attn.initialize(11, 2, "");
  test::randomize_parameters(attn, 90);
  Tensor h = test::random_tensor(Shape{B, T, E}, 91), g = test::random_tensor(Shape{B, T, E}, 92);
  Tensor grad_h = test::random_tensor(Shape{B, T, E}, 93), grad_g = test::random_tensor(Shape{B, T, E}, 94);
  Context ctx;
  const TensorList y = attn.forward({h, g, ranks()}, ctx);
  const TensorList grads = attn.backward({grad_h, grad_g}, ctx);
  REQUIRE(grads.size() == 3);
  CHECK(ops::max_abs_error(grads[2], Tensor::zeros(Shape{B, T})) == 0.0);
  safetensors::NamedTensors in{{"h", h}, {"g", g}, {"ranks", ranks()}, {"grad_h", grad_h}, {"grad_g", grad_g}};
  test::add_parameters(in, attn);
  auto ref = test::run_torch("xlnet", in, {{"embed_dim", E}, {"heads", H}});
  test::expect_streams_close(ref, y, grads, attn);
}

TEST_CASE("two-stream relative attention passes the f64 gradient check with dropout") {
  TwoStreamRelativeAttention attn(8, 2, 0.3);
  attn.initialize(3, 0, "attn");
  attn.to(DType::f64);
  test::randomize_parameters(attn, 95);
  const TensorList inputs{test::random_tensor(Shape{2, 5, 8}, 96, -1, 1, DType::f64),
                          test::random_tensor(Shape{2, 5, 8}, 97, -1, 1, DType::f64), ranks(DType::f64)};
  test::GradCheckOptions options;
  options.max_elements = 24;
  auto report = test::gradcheck(attn, inputs, options);
  INFO(report.str());
  CHECK(report.ok);
}

TEST_CASE("each stream sees only the positions before it in the factorisation order") {
  const std::int64_t T = 5, E = 8;
  TwoStreamRelativeAttention attn(E, 2);
  attn.initialize(4, 0, "attn");
  test::randomize_parameters(attn, 98);
  Context eval;
  eval.training = false;
  const Tensor h = test::random_tensor(Shape{1, T, E}, 99), g = test::random_tensor(Shape{1, T, E}, 100);
  const Tensor order = Tensor::from_vector<float>({2, 0, 4, 1, 3}, Shape{1, T});
  const TensorList base = attn.forward({h, g, order}, eval);
  const std::vector<double> rank{2, 0, 4, 1, 3};
  for (std::int64_t j = 0; j < T; ++j) {
    // Change the content stream at position j only (both streams read keys and values from h).
    std::vector<double> changed = h.to_double_vector();
    for (std::int64_t e = 0; e < E; ++e) changed[static_cast<std::size_t>(j * E + e)] += 1.0;
    const TensorList y = attn.forward({Tensor::from_vector(changed, Shape{1, T, E}).to(DType::f32), g, order}, eval);
    const auto before_h = base[0].to_double_vector(), after_h = y[0].to_double_vector();
    const auto before_g = base[1].to_double_vector(), after_g = y[1].to_double_vector();
    for (std::int64_t i = 0; i < T; ++i) {
      double change_h = 0, change_g = 0;
      for (std::int64_t e = 0; e < E; ++e) {
        const auto at = static_cast<std::size_t>(i * E + e);
        change_h = std::max(change_h, std::abs(after_h[at] - before_h[at]));
        change_g = std::max(change_g, std::abs(after_g[at] - before_g[at]));
      }
      INFO("query " << i << " changed key " << j);
      const auto r = [&](std::int64_t p) { return rank[static_cast<std::size_t>(p)]; };
      if (r(j) > r(i)) CHECK(change_h == 0.0);
      else CHECK(change_h > 1e-4);
      if (r(j) >= r(i)) CHECK(change_g == 0.0);
      else CHECK(change_g > 1e-4);
    }
  }
  // Position 1 is first in the order: its query stream attends to nothing.
  for (std::int64_t e = 0; e < E; ++e) CHECK(base[1].to_double_vector()[static_cast<std::size_t>(E + e)] == 0.0);
}
