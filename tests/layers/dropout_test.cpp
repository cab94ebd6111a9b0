// Dropout: rate, scaling, eval identity, masks independent of the micro-batch split, backward
// with the same mask, and a PyTorch check of the scaling given loom's mask.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/core/rng.h>
#include <loom/layers/dropout.h>

#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;

TEST_CASE("Dropout drops about p, scales by 1/(1-p), is the identity in eval") {
  Dropout drop(0.3);
  drop.initialize(1, 2, "blocks.2.drop");
  Tensor x = Tensor::full(Shape{64, 100}, 1.0);
  Context ctx;
  ctx.seed = 5;
  const auto y = drop.forward({x}, ctx)[0].to_double_vector();
  std::int64_t zeros = 0;
  for (double v : y) {
    if (v == 0.0)
      ++zeros;
    else
      CHECK(v == Approx(1.0 / 0.7));
  }
  CHECK(static_cast<double>(zeros) / static_cast<double>(y.size()) == Approx(0.3).margin(0.02));
  Context eval;
  eval.training = false;
  CHECK(drop.forward({x}, eval)[0].same_storage(x));
}

TEST_CASE("Dropout masks depend on seed, step, layer and global sample index, not on the split") {
  Dropout drop(0.5);
  drop.initialize(1, 3, "blocks.3.dropout");
  Tensor x = test::random_tensor(Shape{6, 10}, 1);
  Context whole;
  whole.seed = 11;
  whole.step = 4;
  const auto full = drop.forward({x}, whole)[0].to_double_vector();
  std::vector<double> parts;
  for (auto [begin, end] : {std::pair<std::int64_t, std::int64_t>{0, 2}, {2, 3}, {3, 6}}) {
    Context ctx;
    ctx.seed = 11;
    ctx.step = 4;
    ctx.first_sample = begin;
    auto part = drop.forward({x.slice(begin, end)}, ctx)[0].to_double_vector();
    parts.insert(parts.end(), part.begin(), part.end());
  }
  CHECK(parts == full);
  Context next_step;
  next_step.seed = 11;
  next_step.step = 5;
  CHECK(drop.forward({x}, next_step)[0].to_double_vector() != full);
  Dropout other(0.5);
  other.initialize(1, 4, "blocks.4.dropout");
  CHECK(other.forward({x}, whole)[0].to_double_vector() != full);
}

TEST_CASE("Dropout backward uses the forward mask; matches PyTorch given that mask") {
  Dropout drop(0.25);
  drop.initialize(2, 0, "drop");
  Tensor x = test::random_tensor(Shape{5, 8}, 2, 0.5, 1.0);  // never zero, so the mask is y != 0
  Tensor grad_y = test::random_tensor(Shape{5, 8}, 3);
  Context ctx;
  Tensor y = drop.forward({x}, ctx)[0];
  Tensor grad_x = drop.backward({grad_y}, ctx)[0];
  auto yv = y.to_double_vector();
  std::vector<float> mask;
  for (double v : yv) mask.push_back(v != 0.0 ? 1.0f : 0.0f);
  auto ref = test::run_torch("dropout", {{"x", x}, {"mask", Tensor::from_vector(mask, Shape{5, 8})}, {"grad_y", grad_y}},
                             {{"p", 0.25}});
  CHECK(test::relative_error(y, ref.get("y")) <= 1e-6);
  CHECK(test::relative_error(grad_x, ref.get("grad_x")) <= 1e-6);
  drop.to(DType::f64);
  auto report = test::gradcheck(drop, {test::random_tensor(Shape{3, 4}, 4, -1, 1, DType::f64)});
  INFO(report.str());
  CHECK(report.ok);
}

TEST_CASE("Dropout's fused mask is exactly the core RNG's Bernoulli stream (the one CUDA uses)") {
  Tensor x = Tensor::full(Shape{5, 1001}, 1.0);  // unaligned to Philox blocks, several tiles per row
  Tensor y = Tensor::empty(Shape{5, 1001});
  dropout_apply(x.slice(2, 5), y, 0.4, 77, 88, 2);  // rows 2..4 of the batch at their global positions
  Tensor mask = Tensor::empty(Shape{3, 1001});
  rng::bernoulli(mask, 77, 88, 0.6, 2 * 1001);
  const auto got = y.slice(0, 3).to_double_vector(), expected = mask.to_double_vector();
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(got[i] == Approx(expected[i] / 0.6));
}
