// The layer tests' one tensor comparison: the norm-wise relative error of torch_reference.h
// (max|actual - expected| / max|expected|, expected the reference) against a tolerance, as a
// Catch2 CHECK that names the tensor and prints the error when it fails.
#pragma once

#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include <loom/core/tensor.h>

#include "torch_reference.h"

namespace loom::test {

inline void check_close(const Tensor& actual, const Tensor& expected, const std::string& what,
                        double tolerance = 1e-5) {
  const double error = relative_error(actual, expected);
  INFO(what << ": relative error " << error << " (tolerance " << tolerance << ")");
  CHECK(error <= tolerance);
}

// The error measured against max(max|expected|, floor) instead of max|expected|: a gradient that
// is zero in exact arithmetic comes out of both frameworks as rounding noise, which a floor of the
// scale of the other gradients keeps from counting as a large relative error. Prints both tensors.
inline void check_close_with_floor(const Tensor& actual, const Tensor& expected, const std::string& what,
                                   double tolerance, double floor) {
  const double scale = std::max(largest_magnitude(expected), floor);
  const double error = relative_error(actual, expected) * largest_magnitude(expected) / scale;
  INFO(what << ": relative error " << error << " (tolerance " << tolerance << ", floor " << floor << ")\nactual   "
            << actual.str(8) << "\nexpected " << expected.str(8));
  CHECK(error <= tolerance);
}

// The CUDA-vs-CPU tests: `gpu` the layer's result on the GPU, `cpu` the same on the host. An
// undefined `cpu` tensor (no gradient for that input) has nothing to compare.
enum class GpuResult {
  // Still on the device: it must be a CUDA tensor, and undefined exactly when `cpu` is.
  on_device,
  // Already copied to the host: it must be defined wherever `cpu` is.
  copied_to_host,
};

inline void check_gpu_close(const Tensor& gpu, const Tensor& cpu, const std::string& what, double tolerance,
                            GpuResult where) {
  INFO(what);
  if (where == GpuResult::on_device) REQUIRE(gpu.defined() == cpu.defined());
  if (!cpu.defined()) return;
  REQUIRE(gpu.defined());
  if (where == GpuResult::on_device) CHECK(gpu.device().is_cuda());
  check_close(where == GpuResult::on_device ? gpu.to(Device::cpu()) : gpu, cpu, what, tolerance);
}

}  // namespace loom::test
