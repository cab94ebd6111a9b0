// Runs a PyTorch reference script (tests/layers/reference/<script>.py) under the Python that has
// Debian's python3-torch (LOOM_TORCH_PYTHON, /usr/bin/python3), exchanging tensors through
// safetensors files in the build directory. A missing torch or a failing script throws
// loom::Error with the script's stderr: the reference tests fail loudly, they never skip.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <loom/core/tensor.h>
#include <loom/layers/safetensors.h>

namespace loom::test {

safetensors::File run_torch(const std::string& script, const safetensors::NamedTensors& inputs,
                            const nlohmann::json& config = nlohmann::json::object());

// Norm-wise relative error max|a - b| / max|b| (b the reference), computed in double on the host.
// A path for a test's file: build/tests/layers/tmp/NAME (the directory is created).
std::string temp_path(const std::string& name);

double relative_error(const Tensor& a, const Tensor& b);

// max |t|, computed in double on the host.
double largest_magnitude(const Tensor& t);

// Deterministic test data: uniform in [lo, hi) from the counter-based RNG keyed by `key`.
Tensor random_tensor(const Shape& shape, std::uint64_t key, double lo = -1.0, double hi = 1.0,
                     DType dtype = DType::f32);

}  // namespace loom::test
