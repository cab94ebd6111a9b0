// StragglerDetector (see straggler.h).
#include <loom/runtime/straggler.h>

#include <algorithm>

#include <loom/core/error.h>

namespace loom::runtime {

StragglerDetector::StragglerDetector(double ratio, int steps) : ratio_(ratio), steps_(steps) {
  LOOM_CHECK(ratio > 1 && steps >= 1, "straggler detector: the ratio must be above 1 and the steps at least 1 (got ",
             ratio, ", ", steps, ")");
}

std::vector<int> StragglerDetector::observe(const std::vector<double>& busy_seconds) {
  std::vector<int> reported;
  if (busy_seconds.empty()) return reported;
  std::vector<double> sorted = busy_seconds;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  median_ = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  streak_.resize(n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    const bool slow = busy_seconds[r] > ratio_ * median_ && median_ > 0;
    streak_[r] = slow ? streak_[r] + 1 : 0;
    if (streak_[r] == steps_) reported.push_back(static_cast<int>(r));
  }
  return reported;
}

}  // namespace loom::runtime
