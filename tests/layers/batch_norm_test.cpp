// BatchNorm2d: f64 finite differences in training (batch statistics) and evaluation (running
// statistics) mode, PyTorch 1.13 fp32 references for outputs, gradients and the running
// statistics update, and the buffers being non-trainable parameters.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/batch_norm.h>

#include "check_close.h"
#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;
using test::check_close;

namespace {

// Non-trivial affine parameters and running statistics (the defaults are ones and zeros).
void perturb(BatchNorm2d& bn) {
  const std::int64_t c = bn.options().channels;
  const DType dtype = bn.weight().value.dtype();
  bn.weight().value.copy_from(test::random_tensor({c}, 51, 0.5, 1.5, dtype));
  bn.bias().value.copy_from(test::random_tensor({c}, 52, -0.5, 0.5, dtype));
  bn.running_mean().value.copy_from(test::random_tensor({c}, 53, -0.3, 0.3, dtype));
  bn.running_var().value.copy_from(test::random_tensor({c}, 54, 0.5, 2.0, dtype));
}

}  // namespace

TEST_CASE("BatchNorm2d gradients match finite differences in f64") {
  for (const bool training : {true, false}) {
    SECTION(training ? "training" : "evaluation") {
      BatchNorm2d bn({.channels = 3});
      bn.initialize(1, 0, "bn");
      bn.to(DType::f64);
      perturb(bn);
      test::GradCheckOptions options;
      options.training = training;
      const test::GradCheckReport report =
          test::gradcheck(bn, {test::random_tensor({4, 3, 5, 3}, 61, -2, 2, DType::f64)}, options);
      INFO(report.str());
      CHECK(report.ok);
      CHECK(report.checked > 0);
    }
  }
}

TEST_CASE("BatchNorm2d equals PyTorch in fp32, running statistics included") {
  for (const bool training : {true, false}) {
    SECTION(training ? "training" : "evaluation") {
      BatchNorm2d bn({.channels = 5, .eps = 1e-3, .momentum = 0.2});
      bn.initialize(1, 0, "bn");
      perturb(bn);
      const Tensor mean_before = bn.running_mean().value.clone();
      const Tensor var_before = bn.running_var().value.clone();
      const Tensor x = test::random_tensor({6, 5, 7, 4}, 62, -1.0, 3.0);
      Context ctx;
      ctx.training = training;
      const Tensor y = bn.forward({x}, ctx)[0];
      const Tensor grad_y = test::random_tensor(y.shape(), 63);
      const Tensor grad_x = bn.backward({grad_y}, ctx)[0];
      const safetensors::File torch = test::run_torch(
          "cnn_layers",
          {{"x", x},
           {"grad_y", grad_y},
           {"weight", bn.weight().value},
           {"bias", bn.bias().value},
           {"running_mean", mean_before},
           {"running_var", var_before}},
          {{"layer", "batch_norm"}, {"eps", 1e-3}, {"momentum", 0.2}, {"training", training}});
      check_close(y, torch.get("y"), "y");
      check_close(grad_x, torch.get("grad_x"), "grad_x");
      check_close(bn.weight().grad, torch.get("grad_weight"), "grad_weight");
      check_close(bn.bias().grad, torch.get("grad_bias"), "grad_bias");
      check_close(bn.running_mean().value, torch.get("running_mean"), "running_mean");
      check_close(bn.running_var().value, torch.get("running_var"), "running_var");
    }
  }
}

TEST_CASE("BatchNorm2d keeps running statistics as non-trainable parameters") {
  BatchNorm2d bn({.channels = 4});
  bn.initialize(1, 0, "layer1.0.bn1");
  std::vector<std::string> names, trainable;
  for (const NamedParameter& p : bn.parameters("layer1.0.bn1")) {
    names.push_back(p.name);
    if (p.parameter->trainable) trainable.push_back(p.name);
  }
  CHECK(names == std::vector<std::string>{"layer1.0.bn1.weight", "layer1.0.bn1.bias", "layer1.0.bn1.running_mean",
                                          "layer1.0.bn1.running_var"});
  CHECK(trainable == std::vector<std::string>{"layer1.0.bn1.weight", "layer1.0.bn1.bias"});
  CHECK(!bn.running_var().grad.defined());
  CHECK(bn.running_var().value.to_float_vector() == std::vector<float>(4, 1.0f));
  Context ctx;
  CHECK_THROWS_WITH(bn.forward({Tensor::zeros({2, 3, 4, 4})}, ctx),
                    Catch::Contains("layer1.0.bn1") && Catch::Contains("[2, 3, 4, 4]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(bn.forward({Tensor::zeros({1, 4, 1, 1})}, ctx), Catch::Contains("more than one value"));
}
