// StragglerDetector (see straggler.h).
#include <loom/runtime/straggler.h>

#include <algorithm>
#include <map>

#include <loom/base/error.h>

namespace loom::runtime {

namespace {
// The median of `sorted` without its element at `skip` (a rank's own time among its stage's).
double median_without(const std::vector<double>& sorted, std::size_t skip) {
  const std::size_t n = sorted.size() - 1;
  const auto at = [&](std::size_t k) { return sorted[k < skip ? k : k + 1]; };
  return n % 2 ? at(n / 2) : (at(n / 2 - 1) + at(n / 2)) / 2;
}
}  // namespace

StragglerDetector::StragglerDetector(const std::vector<int>& stage_of_rank, StragglerRule rule)
    : ranks_(stage_of_rank.size()), rule_(rule) {
  LOOM_CHECK(rule.ratio > 1 && rule.steps >= 1 && rule.warmup_steps >= 0 && rule.min_seconds >= 0,
             "straggler detector: the ratio must be above 1, the steps at least 1, the warm-up steps and the "
             "least busy time at least 0 (got ", rule.ratio, ", ", rule.steps, ", ", rule.warmup_steps, ", ",
             rule.min_seconds, ")");
  std::map<int, std::vector<int>> by_stage;
  for (std::size_t r = 0; r < stage_of_rank.size(); ++r) by_stage[stage_of_rank[r]].push_back(static_cast<int>(r));
  for (auto& [stage, ranks] : by_stage) replica_groups_.push_back(std::move(ranks));
}

std::vector<int> StragglerDetector::observe(const std::vector<double>& busy_seconds) {
  std::vector<int> reported;
  references_.assign(busy_seconds.size(), 0.0);
  if (ranks_ == 0) return reported;  // watching nothing
  LOOM_CHECK(busy_seconds.size() == ranks_, "internal: ", busy_seconds.size(), " busy times for ", ranks_, " ranks");
  // Each rank's reference: the median of its stage's other replicas (sorted once per stage).
  for (const std::vector<int>& group : replica_groups_) {
    if (group.size() < 2) continue;
    std::vector<double> sorted;
    for (const int r : group) sorted.push_back(busy_seconds[static_cast<std::size_t>(r)]);
    std::sort(sorted.begin(), sorted.end());
    for (const int r : group) {
      const double own = busy_seconds[static_cast<std::size_t>(r)];
      const auto at = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), own) - sorted.begin());
      references_[static_cast<std::size_t>(r)] = median_without(sorted, at);
    }
  }
  streak_.resize(ranks_, 0);
  const bool counted = ++observed_ > rule_.warmup_steps;
  for (std::size_t r = 0; r < ranks_; ++r) {
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
