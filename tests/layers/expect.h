// Catch2 helpers shared by the layer tests: ship a layer's parameters to a PyTorch reference and
// compare outputs and gradients with the norm-wise relative error of torch_reference.h.
#pragma once

#include <string>

#include <catch2/catch.hpp>

#include <loom/layers/layer.h>

#include "check_close.h"
#include "torch_reference.h"

namespace loom::test {

// The PyTorch scripts find parameters as "param.<full name>" and return "grad.<full name>".
inline void add_parameters(safetensors::NamedTensors& tensors, Layer& layer) {
  for (auto& np : layer.parameters()) tensors.emplace_back("param." + np.name, np.parameter->value);
}

inline void expect_close(const safetensors::File& reference, const std::string& name, const Tensor& actual,
                         double tolerance = 1e-5) {
  INFO("tensor " << name);
  REQUIRE(reference.has(name));
  REQUIRE(actual.defined());
  check_close(actual, reference.get(name), name, tolerance);
}

inline void expect_parameter_grads_close(const safetensors::File& reference, Layer& layer, double tolerance = 1e-5) {
  for (auto& np : layer.parameters())
    if (np.parameter->trainable) expect_close(reference, "grad." + np.name, np.parameter->grad, tolerance);
}

}  // namespace loom::test
