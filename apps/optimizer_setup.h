// The optimizer and learning-rate schedule `loom train` builds from its flags.
#pragma once

#include <memory>

#include <loom/layers/optimizer.h>

#include "training.h"

namespace loom::apps {

class OptimizerSetup {
 public:
  OptimizerSetup(const TrainOptions& options, std::vector<NamedParameter> parameters, std::int64_t total_steps) {
    if (options.optimizer == "sgd") {
      optimizer_ = std::make_unique<Sgd>(std::move(parameters),
                                         SgdOptions{options.momentum, 0.0, false, options.weight_decay});
    } else if (options.optimizer == "adam" || options.optimizer == "adamw") {
      optimizer_ = std::make_unique<Adam>(
          std::move(parameters), AdamOptions{0.9, 0.999, 1e-8, options.weight_decay, options.optimizer == "adamw"});
    } else {
      LOOM_THROW("unknown optimizer '", options.optimizer, "' (expected sgd, adam or adamw)");
    }
    LOOM_CHECK(options.lr > 0, "--lr must be positive, got ", options.lr);
    schedule_.kind = LrSchedule::parse(options.lr_schedule);
    schedule_.base_lr = options.lr;
    schedule_.warmup_steps = options.warmup_steps;
    schedule_.total_steps = total_steps;
  }

  double learning_rate(std::int64_t step) const { return schedule_.at(step); }
  void step(std::int64_t step, double grad_scale) { optimizer_->step(schedule_.at(step), grad_scale); }
  double local_grad_sum_of_squares() const { return optimizer_->grad_sum_of_squares(); }
  Optimizer& optimizer() { return *optimizer_; }

 private:
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
};

}  // namespace loom::apps
