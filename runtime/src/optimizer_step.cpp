// OptimizerStep (see optimizer_step.h).
#include <loom/runtime/optimizer_step.h>

#include <cmath>

#include <loom/core/ops.h>

namespace loom::runtime {

void validate(const OptimizerConfig& c) {
  LOOM_CHECK(c.kind != OptimizerKind::momentum || c.momentum > 0, "--optimizer momentum needs --momentum > 0, got ",
             c.momentum);
  LOOM_CHECK(std::isfinite(c.lr) && c.lr > 0 && c.lr <= kMaxLearningRate, "--lr must be in (0, ", kMaxLearningRate,
             "], got ", c.lr);
  LOOM_CHECK(c.momentum >= 0 && c.momentum < 1, "--momentum must be in [0, 1), got ", c.momentum);
  LOOM_CHECK(std::isfinite(c.weight_decay) && c.weight_decay >= 0, "--weight-decay must be finite and >= 0, got ",
             c.weight_decay);
  LOOM_CHECK(std::isfinite(c.clip_norm) && c.clip_norm >= 0, "--clip-norm must be finite and >= 0 (0: off), got ",
             c.clip_norm);
  LOOM_CHECK(c.warmup_steps >= 0, "--warmup-steps must be >= 0, got ", c.warmup_steps);
  LOOM_CHECK(c.zero == 0 || c.zero == 1, "--zero must be 0 or 1 (ZeRO stage 1: the optimizer state sharded), got ",
             c.zero);
}

namespace {
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, std::vector<NamedParameter> parameters) {
  validate(c);
  switch (c.kind) {
    case OptimizerKind::momentum:
    case OptimizerKind::sgd:
      return std::make_unique<Sgd>(std::move(parameters), SgdOptions{c.momentum, 0.0, false, c.weight_decay});
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      return std::make_unique<Adam>(std::move(parameters), AdamOptions{0.9, 0.999, 1e-8, c.weight_decay,
                                                                       c.kind == OptimizerKind::adamw});
  }
  LOOM_THROW("internal: optimizer kind");
}
}  // namespace

OptimizerStep::OptimizerStep(const OptimizerConfig& config, const PrecisionConfig& precision,
                             std::vector<NamedParameter> parameters, std::int64_t total_steps,
                             comm::Communicator* norm_group, bool contributes_norm, ZeroShard* shard,
                             TiedParameters* ties)
    : clip_norm_(config.clip_norm), norm_group_(norm_group), ties_(ties), shard_(shard),
      contributes_norm_(contributes_norm || shard) {
  for (const NamedParameter& p : parameters) gradients_.push_back(p.parameter);
  updated_ = shard ? shard->slice() : std::move(parameters);
  if (precision.precision != Precision::fp32) {
    masters_ = std::make_unique<MasterWeights>(updated_, value_dtype(precision.precision));
    updated_ = masters_->parameters();
    masters_->publish();
    if (shard_) shard_->gather();  // collective: the other replicas' slices rounded too
  }
  if (precision.precision == Precision::fp16) scaler_ = std::make_unique<LossScaler>(precision.loss_scaler);
  optimizer_ = make_optimizer(config, updated_);
  if (ties_)
    for (const NamedParameter& p : updated_)  // a copy another stage's canonical counts
      if (ties_->copies().count(p.name)) optimizer_->exclude_from_norm(p.name);
  schedule_.kind = config.lr_schedule;
  schedule_.base_lr = config.lr;
  schedule_.warmup_steps = config.warmup_steps;
  schedule_.total_steps = total_steps;
}

OptimizerStep::~OptimizerStep() = default;

void OptimizerStep::step(std::int64_t step) {
  if (ties_) ties_->sum_gradients();
  if (scaler_) {  // fp16: unscale, or skip the step where any gradient overflowed; then rescale
    const bool stepped = step_unscaled(step, scaler_->scale());
    scaler_->update(!stepped);
    if (stepped) masters_->publish();
    if (stepped && shard_) shard_->start_gather();
  } else {
    optimizer_->step(schedule_.at(step), clip_factor());
    if (masters_) masters_->publish();  // the layers compute with the updated masters rounded to 16 bits
    if (shard_) shard_->start_gather();  // the next forward waits for it (executor.h, ExecutorOptions::zero)
  }
  for (Parameter* p : gradients_) ops::fill(p->grad, 0.0);  // the next step accumulates from zero
}

double OptimizerStep::loss_scale() const { return scaler_ ? scaler_->scale() : 1.0; }

std::vector<NamedParameter> OptimizerStep::checkpointed(const std::vector<NamedParameter>& model) const {
  return masters_ && !shard_ ? with_masters(model, updated_) : model;
}

void OptimizerStep::publish() {
  if (masters_ && shard_) masters_->pull();  // the checkpoint put the fp32 values in the model (ZeRO-1)
  if (masters_) masters_->publish();
  if (masters_ && shard_) shard_->gather();  // collective: every slice rounded, everywhere
}

double OptimizerStep::global_sum_of_squares() {
  double sum_of_squares = contributes_norm_ ? optimizer_->grad_sum_of_squares() : 0.0;
  if (norm_group_) norm_group_->allreduce(&sum_of_squares, 1, DType::f64);
  return sum_of_squares;
}

double OptimizerStep::clip_factor() {
  if (clip_norm_ <= 0) return 1.0;
  const double sum_of_squares = global_sum_of_squares();
  LOOM_CHECK(std::isfinite(sum_of_squares), "the global gradient norm is not finite (", sum_of_squares,
             "); training diverged (lower --lr)");
  return clip_scale(sum_of_squares, clip_norm_);
}

bool OptimizerStep::step_unscaled(std::int64_t step, double loss_scale) {
  // A non-finite gradient anywhere makes the global sum of squares inf or NaN on every rank.
  const double sum_of_squares = global_sum_of_squares();
  if (!std::isfinite(sum_of_squares)) return false;
  const double clip = clip_norm_ > 0 ? clip_scale(sum_of_squares / (loss_scale * loss_scale), clip_norm_) : 1.0;
  optimizer_->step(schedule_.at(step), clip / loss_scale);
  return true;
}

}  // namespace loom::runtime
