// LossScaler (see loss_scaler.h).
#include <loom/runtime/loss_scaler.h>


#include <loom/base/error.h>

namespace loom::runtime {

void validate(const LossScalerOptions& options) {
  LOOM_CHECK(loss_scale_in_range(options.initial_scale), "--loss-scale must be in [2^-24, 2^64], got ",
             options.initial_scale);
  LOOM_CHECK(options.window >= 1, "--loss-scale-window must be at least 1, got ", options.window);
}

LossScaler::LossScaler(LossScalerOptions options)
    : scale_(options.initial_scale), window_(options.window), last_scale_(options.initial_scale) {
  validate(options);
}

void LossScaler::update(bool overflow) {
  last_scale_ = scale_;
  last_skipped_ = overflow;
  if (overflow) {
    scale_ /= 2;
    good_steps_ = 0;
    LOOM_CHECK(scale_ >= kMinLossScale, "fp16 loss scale fell below 2^-24: the gradients are not finite at any "
               "scale, training diverged (lower --lr, or train in bf16)");
    return;
  }
  if (++good_steps_ < window_) return;
  good_steps_ = 0;
  if (scale_ < kMaxLossScale) scale_ *= 2;
}

void LossScaler::restore(double scale, std::int64_t good_steps) {
  scale_ = scale;
  good_steps_ = good_steps;
}

}  // namespace loom::runtime
