// StragglerDetector (see straggler.h).
#include <loom/runtime/straggler.h>

#include <algorithm>

#include <loom/core/error.h>

namespace loom::runtime {

namespace {
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}
}  // namespace

StragglerDetector::StragglerDetector(std::vector<int> stage_of_rank, StragglerRule rule)
    : stage_of_rank_(std::move(stage_of_rank)), rule_(rule) {
  LOOM_CHECK(rule.ratio > 1 && rule.steps >= 1 && rule.warmup_steps >= 0 && rule.min_seconds >= 0,
             "straggler detector: the ratio must be above 1, the steps at least 1, the warm-up steps and the "
             "least busy time at least 0 (got ", rule.ratio, ", ", rule.steps, ", ", rule.warmup_steps, ", ",
             rule.min_seconds, ")");
}

std::vector<int> StragglerDetector::observe(const std::vector<double>& busy_seconds) {
  std::vector<int> reported;
  if (stage_of_rank_.empty()) {  // watching nothing
    references_.assign(busy_seconds.size(), 0.0);
    return reported;
  }
  const std::size_t n = stage_of_rank_.size();
  LOOM_CHECK(busy_seconds.size() == n, "internal: ", busy_seconds.size(), " busy times for ", n, " ranks");
  references_.assign(n, 0.0);
  streak_.resize(n, 0);
  const bool counted = ++observed_ > rule_.warmup_steps;
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<double> others;  // the stage's other replicas
    for (std::size_t q = 0; q < n; ++q)
      if (q != r && stage_of_rank_[q] == stage_of_rank_[r]) others.push_back(busy_seconds[q]);
    if (!others.empty()) references_[r] = median(std::move(others));
    const double busy = busy_seconds[r], reference = references_[r];
    const bool slow = counted && reference > 0 && busy > rule_.ratio * reference && busy >= rule_.min_seconds;
    streak_[r] = slow ? streak_[r] + 1 : 0;
    if (streak_[r] == rule_.steps) reported.push_back(static_cast<int>(r));
  }
  return reported;
}

std::string cores_shared(int local_ranks, int threads, int cores) {
  if (static_cast<long long>(local_ranks) * threads <= cores) return "";
  return std::to_string(local_ranks) + " ranks x " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
         " share " + std::to_string(cores) + " core" + (cores == 1 ? "" : "s") + " on a node";
}

}  // namespace loom::runtime
