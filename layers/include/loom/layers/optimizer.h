// Optimizers over named parameters, with PyTorch's update rules (torch.optim.SGD, Adam, AdamW),
// learning-rate schedules, and the pieces of global gradient-norm clipping.
//
// step(lr, grad_scale) applies the gradients multiplied by grad_scale (the clipping factor, or 1).
// State tensors (momentum, Adam moments) are charged to MemoryCategory::optimizer_state, live on
// the parameter's device, and are exposed by name for checkpoints ("<param>.momentum_buffer",
// "<param>.exp_avg", "<param>.exp_avg_sq"; the step count as "step").
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <loom/layers/layer.h>

namespace loom {

class Optimizer {
 public:
  explicit Optimizer(std::vector<NamedParameter> parameters);
  virtual ~Optimizer() = default;

  virtual std::string type() const = 0;
  // One update with learning rate `lr`; gradients count as grad * grad_scale.
  virtual void step(double lr, double grad_scale = 1.0) = 0;
  void zero_grad();
  std::int64_t steps() const { return steps_; }
  // Sum of squared gradient entries of this optimizer's parameters (in double). Combine the sums of
  // every stage (one replica each) to get the global norm: sqrt(total).
  double grad_sum_of_squares() const;
  // Leaves a parameter out of grad_sum_of_squares (a tied copy whose canonical another stage counts).
  void exclude_from_norm(const std::string& name);

  // Named state for checkpoints; loading writes into these tensors (shapes must match).
  virtual std::vector<std::pair<std::string, Tensor>> state();
  void set_steps(std::int64_t steps) { steps_ = steps; }
  const std::vector<NamedParameter>& parameters() const { return parameters_; }

 protected:
  std::vector<NamedParameter> parameters_;  // trainable parameters only
  std::int64_t steps_ = 0;
  std::set<std::string> excluded_from_norm_;
};

struct SgdOptions {
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
};

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<NamedParameter> parameters, SgdOptions options = {});
  std::string type() const override { return "SGD"; }
  void step(double lr, double grad_scale = 1.0) override;
  std::vector<std::pair<std::string, Tensor>> state() override;

 private:
  SgdOptions options_;
  std::vector<Tensor> momentum_;  // undefined until the first step (PyTorch: buffer = first grad)
};

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = false;  // AdamW
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<NamedParameter> parameters, AdamOptions options = {});
  std::string type() const override { return options_.decoupled_weight_decay ? "AdamW" : "Adam"; }
  void step(double lr, double grad_scale = 1.0) override;
  std::vector<std::pair<std::string, Tensor>> state() override;

 private:
  AdamOptions options_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
};

// Learning rate at a step: constant, or linear warm-up from 0 over `warmup_steps` followed by a
// linear or cosine decay to `min_lr` at `total_steps`.
struct LrSchedule {
  enum class Kind : std::uint8_t { constant, linear, cosine } kind = Kind::constant;
  double base_lr = 0.01;
  double min_lr = 0.0;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 1;
  // The step the schedule starts at (its warm-up and decay run over [first_step, total_steps)):
  // 0, or the checkpoint's step when a resumed run chose another schedule.
  std::int64_t first_step = 0;

  static Kind parse(const std::string& name);  // "constant", "linear", "cosine"
  static const char* name(Kind kind);
  double at(std::int64_t step) const;          // step counts from 0 over the whole run
  // "lr 0.05 constant", "lr 0.05 cosine over steps 1 to 6 after 2 warm-up steps" (steps from 1)
  std::string describe() const;
};

// Global gradient-norm clipping as torch.nn.utils.clip_grad_norm_: the factor min(1, max_norm /
// (norm + 1e-6)) for norm = sqrt(sum_of_squares), the sum over every stage and replica's share.
// Pass it to Optimizer::step as grad_scale.
double clip_scale(double sum_of_squares, double max_norm);

// Trainable parameters of a layer (with full names), the usual argument of an optimizer.
std::vector<NamedParameter> trainable_parameters(Layer& layer, const std::string& prefix = "");

}  // namespace loom
