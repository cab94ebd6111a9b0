// ReLU, GELU (exact erf form), Tanh, Sigmoid against PyTorch and finite differences.
#include <catch2/catch.hpp>

#include <loom/layers/activation.h>

#include "expect.h"
#include "gradcheck.h"

using namespace loom;

TEST_CASE("activations match PyTorch") {
  for (const char* name : {"relu", "gelu", "tanh", "sigmoid"}) {
    INFO(name);
    Activation act(parse_activation(name));
    Tensor x = test::random_tensor(Shape{7, 33}, 11, -4, 4);
    Tensor grad_y = test::random_tensor(Shape{7, 33}, 12);
    Context ctx;
    Tensor y = act.forward({x}, ctx)[0];
    Tensor grad_x = act.backward({grad_y}, ctx)[0];
    auto ref = test::run_torch("layers", {{"x", x}, {"grad_y", grad_y}}, {{"layer", name}});
    test::expect_close(ref, "y", y);
    test::expect_close(ref, "grad_x", grad_x);
  }
}

TEST_CASE("activations pass the f64 gradient check; ReLU's kink is detected, not failed") {
  for (const char* name : {"relu", "gelu", "tanh", "sigmoid"}) {
    INFO(name);
    Activation act(parse_activation(name));
    Tensor x = test::random_tensor(Shape{4, 9}, 13, -3, 3, DType::f64);
    auto report = test::gradcheck(act, {x});
    INFO(report.str());
    CHECK(report.ok);
  }
  // Exactly at the kink: the one-sided slopes differ, the element is skipped.
  ReLU relu;
  Tensor at_kink = Tensor::from_vector<double>({0.0, 1.0, -1.0, 0.5}, Shape{1, 4});
  auto report = test::gradcheck(relu, {at_kink});
  CHECK(report.ok);
  CHECK(report.skipped_kinks == 1);
}
