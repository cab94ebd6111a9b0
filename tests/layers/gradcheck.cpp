// Finite-difference gradient checker (see gradcheck.h).
#include "gradcheck.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include <loom/core/ops.h>
#include <loom/core/rng.h>

namespace loom::test {

namespace {

Context make_context(const GradCheckOptions& o) {
  Context ctx;
  ctx.training = o.training;
  ctx.seed = o.seed;
  ctx.step = o.step_index;
  ctx.first_sample = o.first_sample;
  ctx.loss_denominator = o.loss_denominator;
  return ctx;
}

double objective(Layer& layer, const TensorList& inputs, const TensorList& weights, const GradCheckOptions& o) {
  Context ctx = make_context(o);
  TensorList outputs = layer.forward(inputs, ctx);
  double total = 0.0;
  for (std::size_t k = 0; k < outputs.size() && k < weights.size(); ++k)
    if (weights[k].defined()) total += ops::dot(outputs[k], weights[k]);
  return total;
}

std::vector<std::int64_t> chosen_elements(std::int64_t numel, std::int64_t max_elements) {
  std::vector<std::int64_t> out;
  if (max_elements <= 0 || numel <= max_elements) {
    for (std::int64_t i = 0; i < numel; ++i) out.push_back(i);
    return out;
  }
  for (std::int64_t j = 0; j < max_elements; ++j) out.push_back(j * numel / max_elements + (j * 7) % std::max<std::int64_t>(1, numel / max_elements));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Checker {
  Layer& layer;
  const TensorList& weights;
  const GradCheckOptions& o;
  GradCheckReport& report;
  int failures = 0;

  // Perturbs element i of `values` (an f64 CPU tensor that the objective reads) and compares.
  void check(Tensor values, const Tensor& analytic, const std::string& what, const std::function<double()>& f) {
    LOOM_CHECK(values.dtype() == DType::f64 && values.device().is_cpu(), "gradcheck: ", what,
               " must be an f64 CPU tensor (call layer.to(DType::f64) and pass f64 inputs)");
    LOOM_CHECK(analytic.defined(), "gradcheck: no gradient returned for ", what);
    LOOM_CHECK(analytic.shape() == values.shape(), "gradcheck: gradient of ", what, " has shape ",
               analytic.shape().str(), ", expected ", values.shape().str());
    const std::vector<double> grad = analytic.to_double_vector();
    double* x = values.data<double>();
    const double base = f();
    for (std::int64_t i : chosen_elements(values.numel(), o.max_elements)) {
      const double saved = x[i];
      x[i] = saved + o.step;
      const double plus = f();
      x[i] = saved - o.step;
      const double minus = f();
      x[i] = saved;
      const double numeric = (plus - minus) / (2 * o.step);
      const double right = (plus - base) / o.step, left = (base - minus) / o.step;
      const double scale = std::max(1.0, std::abs(numeric));
      if (std::abs(right - left) > o.kink_tolerance * scale) {
        ++report.skipped_kinks;
        continue;
      }
      ++report.checked;
      const double error = std::abs(grad[static_cast<std::size_t>(i)] - numeric) / scale;
      if (error > report.max_error) {
        report.max_error = error;
        report.worst = what + "[" + std::to_string(i) + "]";
      }
      if (error > o.tolerance) {
        report.ok = false;
        if (failures++ < 8) {
          std::ostringstream line;
          line << "  " << what << "[" << i << "]: analytic " << grad[static_cast<std::size_t>(i)] << ", numeric "
               << numeric << "\n";
          report.failures += line.str();
        }
      }
    }
  }
};

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.shape() == b.shape() && ops::max_abs_error(a, b) <= 1e-12 * std::max(1.0, std::sqrt(ops::sum_of_squares(b)));
}

}  // namespace

std::string GradCheckReport::str() const {
  std::ostringstream out;
  out << (ok ? "ok" : "FAILED") << ": " << checked << " elements checked, " << skipped_kinks
      << " skipped at kinks, max error " << max_error << " at " << worst << "\n"
      << failures;
  return out.str();
}

TensorList to_f64(const TensorList& tensors) {
  TensorList out;
  for (const Tensor& t : tensors)
    out.push_back(t.defined() && is_floating(t.dtype()) ? t.to(DType::f64) : t);
  return out;
}

GradCheckReport gradcheck(Layer& layer, const TensorList& inputs_in, const GradCheckOptions& o) {
  GradCheckReport report;
  // Private copies so the perturbations never touch the caller's tensors.
  TensorList inputs;
  for (const Tensor& t : inputs_in) inputs.push_back(t.defined() ? t.clone() : t);

  // Output weights W_k: fixed random values shaped like each floating output.
  TensorList weights;
  {
    Context ctx = make_context(o);
    TensorList outputs = layer.forward(inputs, ctx);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      if (!outputs[k].defined() || !is_floating(outputs[k].dtype())) {
        weights.emplace_back();
        continue;
      }
      Tensor w = Tensor::empty(outputs[k].shape(), DType::f64);
      rng::uniform(w, 99, 1000 + k, -1.0, 1.0);
      weights.push_back(w);
    }
  }

  // Analytic gradients from the full backward.
  auto params = layer.parameters();
  layer.zero_grad();
  TensorList grad_inputs;
  {
    Context ctx = make_context(o);
    layer.forward(inputs, ctx);
    grad_inputs = layer.backward(weights, ctx);
  }
  std::vector<Tensor> grad_params;
  for (auto& np : params) grad_params.push_back(np.parameter->grad.defined() ? np.parameter->grad.clone() : Tensor());

  // The split backward must give the same gradients.
  layer.zero_grad();
  {
    Context ctx = make_context(o);
    layer.forward(inputs, ctx);
    TensorList split_inputs = layer.backward_input(weights, ctx);
    layer.backward_weight(ctx);
    LOOM_CHECK(split_inputs.size() == grad_inputs.size(), "gradcheck: backward_input returned ", split_inputs.size(),
               " gradients, backward returned ", grad_inputs.size());
    for (std::size_t k = 0; k < grad_inputs.size(); ++k)
      if (!same_values(split_inputs[k], grad_inputs[k])) {
        report.ok = false;
        report.failures += "  backward_input gradient of input " + std::to_string(k) + " differs from backward\n";
      }
    for (std::size_t j = 0; j < params.size(); ++j)
      if (grad_params[j].defined() && !same_values(params[j].parameter->grad, grad_params[j])) {
        report.ok = false;
        report.failures += "  backward_weight gradient of " + params[j].name + " differs from backward\n";
      }
  }
  layer.zero_grad();

  Checker checker{layer, weights, o, report};
  const auto f = [&] { return objective(layer, inputs, weights, o); };
  if (o.check_inputs) {
    LOOM_CHECK(grad_inputs.size() == inputs.size(), "gradcheck: backward returned ", grad_inputs.size(),
               " gradients for ", inputs.size(), " inputs");
    for (std::size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].defined() && is_floating(inputs[k].dtype()))
        checker.check(inputs[k], grad_inputs[k], "input" + std::to_string(k), f);
  }
  if (o.check_parameters)
    for (std::size_t j = 0; j < params.size(); ++j)
      if (params[j].parameter->trainable) checker.check(params[j].parameter->value, grad_params[j], params[j].name, f);
  return report;
}

}  // namespace loom::test
