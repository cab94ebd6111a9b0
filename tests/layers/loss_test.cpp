// Cross-entropy (ignore index, label smoothing) and MSE against PyTorch; loss scaling makes the
// micro-batch gradients add up to the global-batch mean.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/loss.h>

#include "expect.h"
#include "gradcheck.h"

using namespace loom;

TEST_CASE("CrossEntropyLoss matches PyTorch with ignore_index and label smoothing") {
  for (double smoothing : {0.0, 0.1}) {
    INFO("smoothing " << smoothing);
    CrossEntropyLoss loss(-100, smoothing);
    Tensor logits = test::random_tensor(Shape{3, 4, 11}, 21, -3, 3);
    Tensor targets = Tensor::from_vector<std::int64_t>({0, 3, -100, 10, 5, 5, 1, -100, 2, 7, 9, 4}, Shape{3, 4});
    Tensor grad_y = Tensor::full(Shape{}, 1.5);
    Context ctx;
    Tensor y = loss.forward({logits, targets}, ctx)[0];
    CHECK(y.rank() == 0);
    auto grads = loss.backward({grad_y}, ctx);
    CHECK_FALSE(grads[1].defined());
    auto ref = test::run_torch("layers", {{"x", logits}, {"targets", targets}, {"grad_y", grad_y}},
                               {{"layer", "cross_entropy"}, {"ignore_index", -100}, {"smoothing", smoothing}});
    test::expect_close(ref, "y", y);
    test::expect_close(ref, "grad_x", grads[0]);
  }
}

TEST_CASE("MSELoss matches PyTorch, gradients for prediction and target") {
  MSELoss loss;
  Tensor p = test::random_tensor(Shape{6, 5}, 22), t = test::random_tensor(Shape{6, 5}, 23);
  Tensor grad_y = Tensor::full(Shape{}, 1.0);
  Context ctx;
  Tensor y = loss.forward({p, t}, ctx)[0];
  auto grads = loss.backward({grad_y}, ctx);
  auto ref = test::run_torch("layers", {{"x", p}, {"target", t}, {"grad_y", grad_y}}, {{"layer", "mse"}});
  test::expect_close(ref, "y", y);
  test::expect_close(ref, "grad_x", grads[0]);
  test::expect_close(ref, "grad_target", grads[1]);
}

TEST_CASE("losses pass the f64 gradient check") {
  CrossEntropyLoss ce(1, 0.2);
  Tensor logits = test::random_tensor(Shape{5, 4}, 24, -2, 2, DType::f64);
  Tensor targets = Tensor::from_vector<std::int64_t>({0, 1, 3, 2, 3}, Shape{5});
  auto report = test::gradcheck(ce, {logits, targets});
  INFO(report.str());
  CHECK(report.ok);
  MSELoss mse;
  report = test::gradcheck(mse, {test::random_tensor(Shape{3, 4}, 25, -1, 1, DType::f64),
                                 test::random_tensor(Shape{3, 4}, 26, -1, 1, DType::f64)});
  INFO(report.str());
  CHECK(report.ok);
}

TEST_CASE("with loss_denominator, micro-batch losses and gradients add up to the global-batch mean") {
  CrossEntropyLoss loss(-100);
  Tensor logits = test::random_tensor(Shape{8, 6}, 27, -2, 2);
  Tensor targets = Tensor::from_vector<std::int64_t>({0, -100, 2, 3, -100, -100, 1, 5}, Shape{8});
  Tensor one = Tensor::full(Shape{}, 1.0);
  Context whole;
  const double global = loss.forward({logits, targets}, whole)[0].item();
  const Tensor global_grad = loss.backward({one}, whole)[0];
  const double denominator = static_cast<double>(count_targets(targets));
  CHECK(denominator == 5);
  double accumulated = 0.0;
  std::vector<double> grad;
  for (std::int64_t begin : {0, 3}) {  // unequal micro-batches with different ignored counts
    const std::int64_t end = begin == 0 ? 3 : 8;
    Context ctx;
    ctx.loss_denominator = denominator;
    accumulated += loss.forward({logits.slice(begin, end), targets.slice(begin, end)}, ctx)[0].item();
    auto g = loss.backward({one}, ctx)[0].to_double_vector();
    grad.insert(grad.end(), g.begin(), g.end());
  }
  CHECK(accumulated == Approx(global).epsilon(1e-6));
  const auto expected = global_grad.to_double_vector();
  REQUIRE(grad.size() == expected.size());
  for (std::size_t i = 0; i < grad.size(); ++i) CHECK(grad[i] == Approx(expected[i]).margin(1e-7));
}

TEST_CASE("CrossEntropyLoss checks the host copy of its targets when it is given one") {
  // The runtime passes the rows it read on the host (Context::host_targets), so a loss on a GPU need
  // not read its targets back: the checks and counts use that copy, the loss the targets themselves.
  CrossEntropyLoss loss;
  Tensor logits = test::random_tensor(Shape{4, 5}, 3, -2, 2);
  Tensor targets = Tensor::from_vector<std::int64_t>({0, 4, 2, 1}, Shape{4});
  Context plain;
  const double expected = loss.forward({logits, targets}, plain)[0].item();
  Context with_host;
  with_host.host_targets = targets.to(Device::cpu());
  CHECK(loss.forward({logits, targets}, with_host)[0].item() == expected);
  Context bad_host;  // the host copy is what is checked: a target out of range there is reported
  bad_host.host_targets = Tensor::from_vector<std::int64_t>({0, 4, 7, 1}, Shape{4});
  CHECK_THROWS_WITH(loss.forward({logits, targets}, bad_host), Catch::Contains("target 7 at position 2 outside [0, 5)"));
  Context wrong_shape;
  wrong_shape.host_targets = Tensor::from_vector<std::int64_t>({0, 4}, Shape{2});
  CHECK_THROWS_WITH(loss.forward({logits, targets}, wrong_shape), Catch::Contains("the host copy of the targets has shape [2]"));
}
