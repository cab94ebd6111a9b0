// Linear: PyTorch fp32 reference, f64 finite differences, split backward, shape errors.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/linear.h>

#include "expect.h"
#include "gradcheck.h"

using namespace loom;

TEST_CASE("Linear matches PyTorch (3-D input, with and without bias)") {
  for (bool bias : {true, false}) {
    Linear linear(24, 17, bias);
    linear.initialize(3, 0, "fc");
    Tensor x = test::random_tensor(Shape{4, 5, 24}, 1);
    Tensor grad_y = test::random_tensor(Shape{4, 5, 17}, 2);
    Context ctx;
    Tensor y = linear.forward({x}, ctx)[0];
    Tensor grad_x = linear.backward({grad_y}, ctx)[0];
    safetensors::NamedTensors in{{"x", x}, {"grad_y", grad_y}};
    for (auto& np : linear.parameters("")) in.emplace_back("param." + np.name, np.parameter->value);
    auto ref = test::run_torch("layers", in, {{"layer", "linear"}, {"in", 24}, {"out", 17}, {"bias", bias}});
    test::expect_close(ref, "y", y);
    test::expect_close(ref, "grad_x", grad_x);
    test::expect_close(ref, "grad.weight", linear.weight().grad);
    if (bias) test::expect_close(ref, "grad.bias", linear.bias().grad);
  }
}

TEST_CASE("Linear passes the f64 gradient check, split backward included") {
  Linear linear(6, 5);
  linear.initialize(4, 2, "fc");
  linear.to(DType::f64);
  auto report = test::gradcheck(linear, {test::random_tensor(Shape{3, 2, 6}, 5, -1, 1, DType::f64)});
  INFO(report.str());
  CHECK(report.ok);
  CHECK(report.skipped_kinks == 0);
}

TEST_CASE("Linear backward_input leaves the weight gradient to backward_weight") {
  Linear linear(4, 3);
  linear.initialize(1, 0);
  Context ctx;
  linear.forward({test::random_tensor(Shape{2, 4}, 6)}, ctx);
  linear.backward_input({test::random_tensor(Shape{2, 3}, 7)}, ctx);
  CHECK(ops::sum_of_squares(linear.weight().grad) == 0.0);
  linear.backward_weight(ctx);
  CHECK(ops::sum_of_squares(linear.weight().grad) > 0.0);
  CHECK(ctx.saved_bytes() == 0);
}

TEST_CASE("Linear rejects mismatched inputs with the layer, parameter and both shapes") {
  Linear linear(4, 3);
  linear.initialize(1, 5, "blocks.5.proj");
  Context ctx;
  try {
    linear.forward({Tensor::zeros(Shape{2, 7})}, ctx);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("Linear 'blocks.5.proj'") != std::string::npos);
    CHECK(m.find("[2, 7]") != std::string::npos);
    CHECK(m.find("weight shape [3, 4]") != std::string::npos);
  }
  CHECK_THROWS_WITH(linear.forward({Tensor::zeros(Shape{2, 4}, DType::f64)}, ctx),
                    Catch::Contains("dtype f64") && Catch::Contains("weight"));
}
