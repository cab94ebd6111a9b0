// Finite-difference gradient check in f64 for any Layer (the CPU reference every layer passes).
//
// The scalar checked is L = sum_k <output_k, W_k> with fixed random weights W_k, so backward gets
// grad_outputs = W. For each checked element of every floating input and every trainable
// parameter, the analytic gradient from backward is compared with the central difference
// (L(x+h) - L(x-h)) / 2h. Elements at a kink (ReLU at 0, max-pool ties, ...) are detected by the
// one-sided slopes disagreeing and are skipped, counted in the report; a test can bound how many.
// The check also runs backward_input + backward_weight and requires the same gradients as backward.
// The layer and its floating inputs must already be f64 (layer.to(DType::f64)).
#pragma once

#include <cstdint>
#include <string>

#include <loom/layers/layer.h>

namespace loom::test {

struct GradCheckOptions {
  double step = 1e-6;
  double tolerance = 1e-6;       // |analytic - numeric| <= tolerance * max(1, |numeric|)
  double kink_tolerance = 1e-4;  // one-sided slopes differing more than this (relative) = a kink
  std::int64_t max_elements = 48;  // per tensor, evenly spread (0: all)
  bool check_inputs = true;
  bool check_parameters = true;
  // The context every forward gets.
  bool training = true;
  std::uint64_t seed = 1234;
  std::uint64_t step_index = 7;
  std::int64_t first_sample = 0;
  double loss_denominator = 0.0;
};

struct GradCheckReport {
  bool ok = true;
  double max_error = 0.0;  // largest error relative to max(1, |numeric|)
  std::string worst;       // where it was
  std::int64_t checked = 0;
  std::int64_t skipped_kinks = 0;
  std::string failures;    // first failures, readable
  std::string str() const;
};

GradCheckReport gradcheck(Layer& layer, const TensorList& inputs, const GradCheckOptions& options = {});

// f64 copies of the floating tensors (integer tensors are passed through).
TensorList to_f64(const TensorList& tensors);

}  // namespace loom::test
