// Flatten, Reshape (views), Residual and Add: shapes, no copies, gradients.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/activation.h>
#include <loom/layers/linear.h>
#include <loom/layers/reshape.h>
#include <loom/layers/residual.h>
#include <loom/layers/sequential.h>

#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;

TEST_CASE("Flatten and Reshape are views keeping the batch dim") {
  Tensor x = test::random_tensor(Shape{2, 3, 4, 5}, 1);
  Flatten flatten;
  Context ctx;
  Tensor y = flatten.forward({x}, ctx)[0];
  CHECK(y.shape() == Shape{2, 60});
  CHECK(y.same_storage(x));
  CHECK(flatten.backward({y}, ctx)[0].shape() == x.shape());
  Reshape reshape({-1, 10});
  Context ctx2;
  Tensor z = reshape.forward({x}, ctx2)[0];
  CHECK(z.shape() == Shape{2, 6, 10});
  CHECK(reshape.output_shapes({x.shape()})[0] == Shape{2, 6, 10});
  CHECK(reshape.backward({z}, ctx2)[0].shape() == x.shape());
  Reshape bad({7});
  Context ctx3;
  CHECK_THROWS_WITH(bad.forward({x}, ctx3), Catch::Contains("cannot reshape"));
}

TEST_CASE("Residual(body) = x + body(x) passes the f64 gradient check; Add returns both gradients") {
  auto body = std::make_unique<Sequential>();
  body->add(std::make_unique<Linear>(5, 7), "fc1");
  body->add(std::make_unique<GELU>(), "act");
  body->add(std::make_unique<Linear>(7, 5), "fc2");
  Residual residual(std::move(body));
  residual.initialize(3, 0, "res");
  CHECK(residual.parameters()[0].name == "body.fc1.weight");
  residual.to(DType::f64);
  auto report = test::gradcheck(residual, {test::random_tensor(Shape{4, 5}, 2, -1, 1, DType::f64)});
  INFO(report.str());
  CHECK(report.ok);

  Add add;
  report = test::gradcheck(add, {test::random_tensor(Shape{3, 2}, 3, -1, 1, DType::f64),
                                 test::random_tensor(Shape{3, 2}, 4, -1, 1, DType::f64)});
  INFO(report.str());
  CHECK(report.ok);
}
