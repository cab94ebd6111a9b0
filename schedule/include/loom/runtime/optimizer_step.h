// OptimizerStep: what the schedule's STEP action does on one rank. The optimizer of this rank's
// parameters (optimizer_kind.h), the learning-rate schedule, and global gradient-norm clipping,
// whose norm sums every stage's share over `norm_group` (each stage counted once: only ranks with
// `contributes_norm`, replica 0 of their stages, add theirs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/layers/optimizer.h>
#include <loom/layers/optimizer_kind.h>

namespace loom::runtime {

struct OptimizerConfig {
  std::string kind = "sgd";            // optimizer_kind.h
  double lr = 0.05;
  double momentum = 0.9;               // sgd and momentum
  double weight_decay = 0.0;
  std::string lr_schedule = "cosine";  // constant | linear | cosine (decay to 0 after warmup_steps)
  std::int64_t warmup_steps = 0;
  double clip_norm = 0.0;              // 0: off
};

// The largest learning rate a config may give (beyond it, a typo or an attack, not a run).
inline constexpr double kMaxLearningRate = 1e3;

// Throws loom::Error, naming the flag, for an unknown optimizer or schedule and any number out of
// its range. The OptimizerStep checks its config with it; the Trainer before it builds anything.
void validate(const OptimizerConfig& config);

class OptimizerStep {
 public:
  OptimizerStep(const OptimizerConfig& config, std::vector<NamedParameter> parameters, std::int64_t total_steps,
                comm::Communicator* norm_group, bool contributes_norm);

  // The update that completes global batch `step` (counted from 0 over the whole run).
  void operator()(std::int64_t step);
  // The same for gradients scaled by `loss_scale` (fp16, loss_scaler.h): they are divided by it
  // as the optimizer reads them (clipping sees the unscaled norm). Where any gradient of the world
  // is not finite nothing is updated and it returns false, the same on every rank.
  bool step_unscaled(std::int64_t step, double loss_scale);
  double learning_rate(std::int64_t step) const { return schedule_.at(step); }
  Optimizer& optimizer() { return *optimizer_; }

 private:
  double clip_factor();
  double global_sum_of_squares();  // collective over norm_group

  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  double clip_norm_ = 0.0;
  comm::Communicator* norm_group_ = nullptr;
  bool contributes_norm_ = false;
};

}  // namespace loom::runtime
