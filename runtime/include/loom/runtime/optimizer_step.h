// OptimizerStep: what the schedule's STEP action does on one rank. The optimizer of this rank's
// parameters (optimizer_kind.h) with the precision's fp32 masters and loss scaler, the
// learning-rate schedule, and global gradient-norm clipping,
// whose norm sums every stage's share over `norm_group` (each stage counted once: only ranks with
// `contributes_norm`, replica 0 of their stages, add theirs).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/layers/optimizer.h>
#include <loom/layers/optimizer_kind.h>
#include <loom/runtime/loss_scaler.h>
#include <loom/runtime/master_weights.h>
#include <loom/runtime/precision.h>
#include <loom/runtime/tied_parameters.h>
#include <loom/runtime/zero_shard.h>

namespace loom::runtime {

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::sgd;  // optimizer_kind.h
  double lr = 0.05;
  double momentum = 0.9;               // sgd and momentum
  double weight_decay = 0.0;
  LrSchedule::Kind lr_schedule = LrSchedule::Kind::cosine;  // decay to 0 after warmup_steps
  std::int64_t warmup_steps = 0;
  double clip_norm = 0.0;              // 0: off
  int zero = 0;                        // 1: ZeRO-1 (trainer_config.h)
};

// The largest learning rate a config may give (beyond it, a typo or an attack, not a run).
inline constexpr double kMaxLearningRate = 1e3;

// Throws loom::Error, naming the flag, for any number out of its range. The OptimizerStep checks its
// config with it; resolve_config (trainer_config.h) before the Trainer builds anything.
void validate(const OptimizerConfig& config);

class OptimizerStep {
 public:
  // `precision`: under bf16 and fp16 the step updates fp32 master weights (master_weights.h), under
  // fp16 with the loss scaler (loss_scaler.h).
  // `parameters`: the model's trainable parameters on their device. Under bf16 and fp16 the
  // optimizer updates fp32 masters of them, published to the model (rounded) now and after each step.
  // `shard` (--zero 1): the optimizer and the masters hold this replica's slice only (zero_shard.h);
  // each step ends by gathering the slices, and every replica adds its slice to the norm.
  // `ties` (tied_parameters.h): each step first sums the gradients of tied parameters across
  // stages, and a copy whose canonical another stage holds stays out of the norm (counted there).
  OptimizerStep(const OptimizerConfig& config, const PrecisionConfig& precision, std::vector<NamedParameter> parameters,
                std::int64_t total_steps, comm::Communicator* norm_group, bool contributes_norm,
                ZeroShard* shard = nullptr, TiedParameters* ties = nullptr);
  ~OptimizerStep();

  // The update that completes global batch `step` (counted from 0 over the whole run): fp32 and bf16
  // step (bf16 then publishes the masters); fp16 divides the gradients by the loss scale as the
  // optimizer reads them (clipping sees the unscaled norm) and, where any gradient of the world is
  // not finite, skips the step on every rank; then the scaler moves the scale. Last, every gradient
  // of the model's parameters (and, through TiedParameters, of their tied copies) is zero again.
  void step(std::int64_t step);
  // The gradient the last stage's backward starts from: the loss scale under fp16, else 1.
  double loss_scale() const;
  double learning_rate(std::int64_t step) const { return schedule_.at(step); }
  const LrSchedule& schedule() const { return schedule_; }
  // A resumed run's schedule starts at `step` (LrSchedule::first_step): see resume_schedule_start.
  void start_schedule_at(std::int64_t step) { schedule_.first_step = step; }
  Optimizer& optimizer() { return *optimizer_; }
  ZeroShard* shard() { return shard_; }
  bool has_masters() const { return masters_ != nullptr; }
  // The parameters the optimizer updates: the model's, their masters, or (ZeRO) the slice's.
  const std::vector<NamedParameter>& updated() const { return updated_; }
  LossScaler* scaler() { return scaler_.get(); }  // fp16, else null
  // What checkpoints hold: `model` (every parameter and buffer) with the masters in place of the
  // trainable parameters under bf16 and fp16 (not under --zero 1: the masters are slices; the
  // checkpoint gathers them, zero_checkpoint.h).
  std::vector<NamedParameter> checkpointed(const std::vector<NamedParameter>& model) const;
  // After the masters were loaded (a resume): the model's parameters from them. Under --zero 1 the
  // checkpoint loads the fp32 values into the model; the slices' masters take them (collective).
  void publish();

 private:
  double clip_factor();
  double global_sum_of_squares();  // collective over norm_group
  bool step_unscaled(std::int64_t step, double loss_scale);

  std::unique_ptr<MasterWeights> masters_;  // bf16, fp16
  std::unique_ptr<LossScaler> scaler_;      // fp16
  std::vector<NamedParameter> updated_;     // what the optimizer updates: the parameters or their masters
  std::vector<Parameter*> gradients_;       // the model's parameters, whose gradients each step zeroes
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  double clip_norm_ = 0.0;
  comm::Communicator* norm_group_ = nullptr;
  TiedParameters* ties_ = nullptr;
  ZeroShard* shard_ = nullptr;
  bool contributes_norm_ = false;
};

}  // namespace loom::runtime
