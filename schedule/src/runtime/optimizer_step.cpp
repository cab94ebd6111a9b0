// OptimizerStep (see optimizer_step.h).
#include <loom/runtime/optimizer_step.h>

#include <cmath>

namespace loom::runtime {

void validate(const OptimizerConfig& c) {
  const OptimizerKind kind = parse_optimizer_kind(c.kind);
  LOOM_CHECK(kind != OptimizerKind::momentum || c.momentum > 0, "--optimizer momentum needs --momentum > 0, got ",
             c.momentum);
  LOOM_CHECK(std::isfinite(c.lr) && c.lr > 0 && c.lr <= kMaxLearningRate, "--lr must be in (0, ", kMaxLearningRate,
             "], got ", c.lr);
  LOOM_CHECK(c.momentum >= 0 && c.momentum < 1, "--momentum must be in [0, 1), got ", c.momentum);
  LOOM_CHECK(std::isfinite(c.weight_decay) && c.weight_decay >= 0, "--weight-decay must be finite and >= 0, got ",
             c.weight_decay);
  LOOM_CHECK(std::isfinite(c.clip_norm) && c.clip_norm >= 0, "--clip-norm must be finite and >= 0 (0: off), got ",
             c.clip_norm);
  LOOM_CHECK(c.warmup_steps >= 0, "--warmup-steps must be >= 0, got ", c.warmup_steps);
  LrSchedule::parse(c.lr_schedule);
}

namespace {
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, std::vector<NamedParameter> parameters) {
  validate(c);
  const OptimizerKind kind = parse_optimizer_kind(c.kind);
  switch (kind) {
    case OptimizerKind::momentum:
    case OptimizerKind::sgd:
      return std::make_unique<Sgd>(std::move(parameters), SgdOptions{c.momentum, 0.0, false, c.weight_decay});
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      return std::make_unique<Adam>(std::move(parameters), AdamOptions{0.9, 0.999, 1e-8, c.weight_decay,
                                                                       kind == OptimizerKind::adamw});
  }
  LOOM_THROW("internal: optimizer kind");
}
}  // namespace

OptimizerStep::OptimizerStep(const OptimizerConfig& config, std::vector<NamedParameter> parameters,
                             std::int64_t total_steps, comm::Communicator* norm_group, bool contributes_norm)
    : optimizer_(make_optimizer(config, std::move(parameters))), clip_norm_(config.clip_norm),
      norm_group_(norm_group), contributes_norm_(contributes_norm) {
  schedule_.kind = LrSchedule::parse(config.lr_schedule);
  schedule_.base_lr = config.lr;
  schedule_.warmup_steps = config.warmup_steps;
  schedule_.total_steps = total_steps;
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

void OptimizerStep::operator()(std::int64_t step) { optimizer_->step(schedule_.at(step), clip_factor()); }

bool OptimizerStep::step_unscaled(std::int64_t step, double loss_scale) {
  // A non-finite gradient anywhere makes the global sum of squares inf or NaN on every rank.
  const double sum_of_squares = global_sum_of_squares();
  if (!std::isfinite(sum_of_squares)) return false;
  const double clip = clip_norm_ > 0 ? clip_scale(sum_of_squares / (loss_scale * loss_scale), clip_norm_) : 1.0;
  optimizer_->step(schedule_.at(step), clip / loss_scale);
  return true;
}

}  // namespace loom::runtime
