// SGD, Adam/AdamW and learning-rate schedules (see optimizer.h). The per-element math is shared
// with the CUDA kernels (optimizer_math.h, cuda/optimizer.cu); dispatch by the parameter's device
// happens here. CUDA parameters are stepped one tensor per kernel; the CPU parameters are stepped
// together, as one flat range cut across loom's threads (parameter_spans.h) into vectorised spans
// (cpu_update.h).
#include <loom/layers/optimizer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include <loom/core/dtype_dispatch.h>
#include <loom/core/ops.h>

#include "cuda/optimizer.h"
#include "optimizers/cpu_update.h"
#include "optimizers/parameter_spans.h"

namespace loom {

namespace {

Tensor zeros_like_state(const Tensor& like) {
  MemoryCategoryScope scope(MemoryCategory::optimizer_state);
  return Tensor::zeros(like.shape(), like.dtype(), like.device());
}

// Raw pointers of one CPU parameter's update, taken (and their dtypes checked) before the threads
// start, so that the parallel part only computes.
struct CpuSlot {
  std::size_t index;  // into the optimizer's parameters
  DType dtype;
  void* value;
  const void* grad;
  void* state0;  // momentum buffer or exp_avg (null: none)
  void* state1;  // exp_avg_sq (null: none)
};

CpuSlot cpu_slot(std::size_t index, const NamedParameter& p, const Tensor* state0, const Tensor* state1) {
  const Tensor& value = p.parameter->value;
  LOOM_CHECK(value.dtype() == DType::f32 || value.dtype() == DType::f64, "optimizer: parameter ", p.name,
             " has dtype ", dtype_name(value.dtype()), " (f32 or f64 expected)");
  LOOM_CHECK(p.parameter->grad.dtype() == value.dtype(), "optimizer: gradient of ", p.name, " has dtype ",
             dtype_name(p.parameter->grad.dtype()), ", its parameter ", dtype_name(value.dtype()));
  return {index, value.dtype(), value.raw_data(), p.parameter->grad.raw_data(), state0 ? state0->raw_data() : nullptr,
          state1 ? state1->raw_data() : nullptr};
}

// Runs update(slot, begin, end) over pieces of every CPU slot, concurrently (see ParameterSpans).
void step_cpu_slots(const std::vector<CpuSlot>& slots,
                    const std::function<void(const CpuSlot&, std::int64_t, std::int64_t)>& update,
                    const std::vector<NamedParameter>& parameters) {
  std::vector<std::int64_t> sizes;
  for (const CpuSlot& slot : slots) sizes.push_back(parameters[slot.index].parameter->value.numel());
  optim::ParameterSpans(sizes).for_each(
      [&](std::size_t k, std::int64_t begin, std::int64_t end) { update(slots[k], begin, end); });
}

template <typename T>
T* at(void* data, std::int64_t offset) {
  return data ? static_cast<T*>(data) + offset : nullptr;
}

}  // namespace

Optimizer::Optimizer(std::vector<NamedParameter> parameters) {
  for (NamedParameter& p : parameters) {
    if (!p.parameter->trainable) continue;
    LOOM_CHECK(p.parameter->grad.defined() && p.parameter->grad.shape() == p.parameter->value.shape(),
               "optimizer: parameter ", p.name, " has no gradient of its shape ", p.parameter->value.shape().str());
    parameters_.push_back(p);
  }
}

void Optimizer::zero_grad() {
  for (NamedParameter& p : parameters_) ops::fill(p.parameter->grad, 0.0);
}

// One f64 per device accumulates the squares of every gradient there, read once: on a GPU one wait
// per step instead of one per parameter. Same order of additions as one double on the host.
double Optimizer::grad_sum_of_squares() const {
  std::vector<Tensor> totals;
  for (const NamedParameter& p : parameters_) {
    if (excluded_from_norm_.count(p.name)) continue;
    const Tensor& grad = p.parameter->grad;
    auto total = std::find_if(totals.begin(), totals.end(), [&](const Tensor& t) { return t.device() == grad.device(); });
    if (total == totals.end()) total = totals.insert(totals.end(), Tensor::zeros({1}, DType::f64, grad.device()));
    ops::add_sum_of_squares(grad, *total);
  }
  double sum = 0;
  for (const Tensor& total : totals) sum += total.item();
  return sum;
}

void Optimizer::exclude_from_norm(const std::string& name) {
  const bool known = std::any_of(parameters_.begin(), parameters_.end(), [&](const NamedParameter& p) { return p.name == name; });
  LOOM_CHECK(known, "exclude_from_norm: the optimizer has no parameter '", name, "'");
  excluded_from_norm_.insert(name);
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state() { return {}; }

Sgd::Sgd(std::vector<NamedParameter> parameters, SgdOptions options)
    : Optimizer(std::move(parameters)), options_(options) {
  LOOM_CHECK(options.momentum >= 0 && options.weight_decay >= 0, "SGD: momentum and weight decay must be >= 0");
  LOOM_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
             "SGD: Nesterov momentum needs momentum > 0 and zero dampening");
  momentum_.resize(parameters_.size());
}

void Sgd::step(double lr, double grad_scale) {
  const bool use_momentum = options_.momentum != 0.0;
  std::vector<bool> first(parameters_.size(), false);
  std::vector<CpuSlot> cpu;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i].parameter;
    first[i] = use_momentum && !momentum_[i].defined();
    if (first[i]) momentum_[i] = zeros_like_state(p.value);
    Tensor* buffer = use_momentum ? &momentum_[i] : nullptr;
    if (!p.value.device().is_cuda()) {
      cpu.push_back(cpu_slot(i, parameters_[i], buffer, nullptr));
      continue;
    }
    optim::cuda::sgd_step(p.value, p.grad, buffer, lr, grad_scale, options_.momentum, options_.dampening,
                          options_.weight_decay, options_.nesterov, first[i]);
  }
  step_cpu_slots(cpu, [&](const CpuSlot& slot, std::int64_t begin, std::int64_t end) {
    dispatch_floating(slot.dtype, "optimizer", [&]<typename T>(T) {
      const optim::cpu::SgdScalars<T> s{static_cast<T>(lr), static_cast<T>(options_.momentum),
                                        static_cast<T>(options_.dampening), static_cast<T>(options_.weight_decay),
                                        static_cast<T>(grad_scale), options_.nesterov};
      optim::cpu::sgd_span<T>(at<T>(slot.value, begin), static_cast<const T*>(slot.grad) + begin,
                              at<T>(slot.state0, begin), end - begin, s, first[slot.index]);
    });
  }, parameters_);
  ++steps_;
}

std::vector<std::pair<std::string, Tensor>> Sgd::state() {
  std::vector<std::pair<std::string, Tensor>> named;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (options_.momentum != 0.0 && !momentum_[i].defined()) momentum_[i] = zeros_like_state(parameters_[i].parameter->value);
    if (momentum_[i].defined()) named.emplace_back(parameters_[i].name + ".momentum_buffer", momentum_[i]);
  }
  return named;
}

Adam::Adam(std::vector<NamedParameter> parameters, AdamOptions options)
    : Optimizer(std::move(parameters)), options_(options) {
  LOOM_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
             "Adam: betas must be in [0, 1), got ", options.beta1, " and ", options.beta2);
  LOOM_CHECK(options.eps >= 0 && options.weight_decay >= 0, "Adam: eps and weight decay must be >= 0");
  for (const NamedParameter& p : parameters_) {
    exp_avg_.push_back(zeros_like_state(p.parameter->value));
    exp_avg_sq_.push_back(zeros_like_state(p.parameter->value));
  }
}

void Adam::step(double lr, double grad_scale) {
  ++steps_;
  const double bias_correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(options_.beta2, static_cast<double>(steps_)));
  std::vector<CpuSlot> cpu;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i].parameter;
    if (!p.value.device().is_cuda()) {
      cpu.push_back(cpu_slot(i, parameters_[i], &exp_avg_[i], &exp_avg_sq_[i]));
      continue;
    }
    optim::cuda::adam_step(p.value, p.grad, exp_avg_[i], exp_avg_sq_[i], lr, grad_scale, options_.beta1,
                           options_.beta2, options_.eps, options_.weight_decay, options_.decoupled_weight_decay,
                           bias_correction1, bias_correction2_sqrt);
  }
  step_cpu_slots(cpu, [&](const CpuSlot& slot, std::int64_t begin, std::int64_t end) {
    dispatch_floating(slot.dtype, "optimizer", [&]<typename T>(T) {
      const optim::cpu::AdamScalars<T> s{static_cast<T>(lr), static_cast<T>(options_.beta1),
                                         static_cast<T>(options_.beta2), static_cast<T>(options_.eps),
                                         static_cast<T>(options_.weight_decay), static_cast<T>(grad_scale),
                                         static_cast<T>(bias_correction1), static_cast<T>(bias_correction2_sqrt),
                                         options_.decoupled_weight_decay};
      optim::cpu::adam_span<T>(at<T>(slot.value, begin), static_cast<const T*>(slot.grad) + begin,
                               at<T>(slot.state0, begin), at<T>(slot.state1, begin), end - begin, s);
    });
  }, parameters_);
}

std::vector<std::pair<std::string, Tensor>> Adam::state() {
  std::vector<std::pair<std::string, Tensor>> named;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    named.emplace_back(parameters_[i].name + ".exp_avg", exp_avg_[i]);
    named.emplace_back(parameters_[i].name + ".exp_avg_sq", exp_avg_sq_[i]);
  }
  return named;
}

LrSchedule::Kind LrSchedule::parse(const std::string& name) {
  if (name == "constant") return Kind::constant;
  if (name == "linear") return Kind::linear;
  if (name == "cosine") return Kind::cosine;
  LOOM_THROW("unknown learning-rate schedule '", name, "' (expected constant, linear or cosine)");
}

const char* LrSchedule::name(Kind kind) {
  switch (kind) {
    case Kind::constant: return "constant";
    case Kind::linear: return "linear";
    case Kind::cosine: return "cosine";
  }
  return "?";
}

double LrSchedule::at(std::int64_t run_step) const {
  const std::int64_t step = run_step - first_step;
  if (warmup_steps > 0 && step < warmup_steps)
    return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (kind == Kind::constant) return base_lr;
  const std::int64_t decay_steps = std::max<std::int64_t>(1, total_steps - first_step - warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps));
  if (kind == Kind::linear) return min_lr + (base_lr - min_lr) * (1.0 - progress);
  return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
}

std::string LrSchedule::describe() const {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.4g", base_lr);
  std::string text = "lr " + std::string(rate) + " " + name(kind);
  if (kind != Kind::constant)
    text += " over steps " + std::to_string(first_step + 1) + " to " + std::to_string(total_steps);
  if (warmup_steps > 0) text += " after " + std::to_string(warmup_steps) + " warm-up steps";
  return text;
}

double clip_scale(double sum_of_squares, double max_norm) {
  LOOM_CHECK(max_norm > 0, "gradient clipping needs a positive max norm, got ", max_norm);
  return std::min(1.0, max_norm / (std::sqrt(sum_of_squares) + 1e-6));
}

std::vector<NamedParameter> trainable_parameters(Layer& layer, const std::string& prefix) {
  std::vector<NamedParameter> result;
  for (const NamedParameter& p : layer.parameters(prefix))
    if (p.parameter->trainable) result.push_back(p);
  return result;
}

}  // namespace loom
