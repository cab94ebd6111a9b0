// LayerNorm against PyTorch (affine and not) and finite differences.
#include <catch2/catch.hpp>

#include <loom/layers/layer_norm.h>

#include "expect.h"
#include "gradcheck.h"

using namespace loom;

TEST_CASE("LayerNorm matches PyTorch") {
  for (bool affine : {true, false}) {
    LayerNorm norm(40, 1e-5, affine);
    norm.initialize(2, 0, "norm");
    if (affine) {  // non-trivial gamma and beta
      norm.weight().value = test::random_tensor(Shape{40}, 8, 0.5, 1.5);
      norm.bias().value = test::random_tensor(Shape{40}, 9);
    }
    Tensor x = test::random_tensor(Shape{3, 5, 40}, 10, -2, 3);
    Tensor grad_y = test::random_tensor(Shape{3, 5, 40}, 11);
    Context ctx;
    Tensor y = norm.forward({x}, ctx)[0];
    Tensor grad_x = norm.backward({grad_y}, ctx)[0];
    safetensors::NamedTensors in{{"x", x}, {"grad_y", grad_y}};
    test::add_parameters(in, norm);
    auto ref = test::run_torch("layers", in, {{"layer", "layer_norm"}, {"dim", 40}, {"eps", 1e-5}, {"affine", affine}});
    test::expect_close(ref, "y", y);
    test::expect_close(ref, "grad_x", grad_x);
    if (affine) test::expect_parameter_grads_close(ref, norm);
  }
}

TEST_CASE("LayerNorm passes the f64 gradient check") {
  LayerNorm norm(7);
  norm.initialize(1, 0);
  norm.to(DType::f64);
  norm.weight().value = test::random_tensor(Shape{7}, 3, 0.5, 1.5, DType::f64);
  auto report = test::gradcheck(norm, {test::random_tensor(Shape{2, 3, 7}, 4, -2, 2, DType::f64)});
  INFO(report.str());
  CHECK(report.ok);
}
