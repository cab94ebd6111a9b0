// Dynamic loss scaling for fp16 training (precision.h). fp16 holds at most 65504 and rounds values
// under 6e-8 to zero, so the backward of every micro-batch starts from the loss gradient times
// `scale` (StageRunner), which lifts small activation gradients out of fp16's underflow; the
// optimizer divides the fp32 parameter gradients by it again (OptimizerStep::step_unscaled).
// Where the scaled gradients overflowed (a non-finite gradient on any rank), the step is skipped on
// every rank and the scale halves; after `window` good steps in a row it doubles. The rule is
// PyTorch's GradScaler's (growth 2, backoff 0.5), and the state (scale, good steps in a row) is in
// the checkpoints, so a resumed run goes on bit for bit.
#pragma once

#include <cstdint>

namespace loom::runtime {

// The scales loom allows: from fp16's smallest value, 2^-24, to 2^64.
inline constexpr double kMinLossScale = 0x1p-24;
inline constexpr double kMaxLossScale = 0x1p64;
inline bool loss_scale_in_range(double scale) { return scale >= kMinLossScale && scale <= kMaxLossScale; }

struct LossScalerOptions {
  double initial_scale = 65536.0;  // 2^16, as PyTorch
  std::int64_t window = 2000;      // good steps in a row before the scale doubles
};

// Throws loom::Error naming --loss-scale / --loss-scale-window for values out of range.
void validate(const LossScalerOptions& options);

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options);

  double scale() const { return scale_; }
  std::int64_t good_steps() const { return good_steps_; }
  // After a step: `overflow` (it was skipped) halves the scale and restarts the count; a good step
  // counts, and the window-th in a row doubles the scale. A scale under 2^-24 (fp16's smallest
  // value) is an error: no scale makes the gradients finite, training diverged.
  void update(bool overflow);
  // The state a checkpoint held.
  void restore(double scale, std::int64_t good_steps);
  // The last update: the scale that step used and whether it was skipped.
  double last_scale() const { return last_scale_; }
  bool last_skipped() const { return last_skipped_; }

 private:
  double scale_;
  std::int64_t good_steps_ = 0;
  std::int64_t window_;
  double last_scale_;
  bool last_skipped_ = false;
};

}  // namespace loom::runtime
