// Straggler warning: which ranks are much slower than the ranks doing the same work, step after step.
//
// In a synchronous pipeline every rank's step takes the same wall time (each waits for the
// slowest), so what tells a slow rank apart is its *busy* time: the step's time on that rank not
// spent waiting for the others (Executor's StepResult::busy_seconds). Only the replicas of one
// stage do the same work; stages of unequal cost are a partition to re-plan, not a slow rank, so a
// rank is compared with the median of its stage's other replicas (a stage of one replica, never).
// It is reported, once per streak, when its busy time is over `ratio` x that median and at least
// `min_seconds` for `steps` steps in a row, counted after the first `warmup_steps` (allocations,
// caches). Ranks sharing cores (an oversubscribed node) wait for each other's time slices, which
// no busy time separates from slowness: the Trainer then watches nothing (cores_shared()).
#pragma once

#include <string>
#include <vector>

namespace loom::runtime {

struct StragglerRule {
  double ratio = 1.5;         // over this many times the median of the stage's other replicas
  int steps = 3;              // for this many steps in a row
  int warmup_steps = 2;       // not counted: the first steps allocate and fill caches
  double min_seconds = 0.01;  // busy less than this per step is timer and scheduling noise
};

class StragglerDetector {
 public:
  StragglerDetector() = default;  // watches nothing
  // stage_of_rank[r]: world rank r's pipeline stage.
  explicit StragglerDetector(const std::vector<int>& stage_of_rank, StragglerRule rule = {});

  // One step's busy seconds, per world rank; returns the ranks whose streak reaches rule.steps now.
  std::vector<int> observe(const std::vector<double>& busy_seconds);
  // Per world rank, the median busy time of its stage's other replicas at the last step (0: none).
  const std::vector<double>& references() const { return references_; }
  const StragglerRule& rule() const { return rule_; }

 private:
  std::size_t ranks_ = 0;
  std::vector<std::vector<int>> replica_groups_;  // the ranks of each stage
  StragglerRule rule_;
  int observed_ = 0;
  std::vector<double> references_;
  std::vector<int> streak_;  // per rank: consecutive counted steps over the threshold
};

// Why busy times cannot be compared on a node where `local_ranks` processes of `threads` math
// threads each share `cores` cores: a one-line reason, or empty when each has cores of its own.
std::string cores_shared(int local_ranks, int threads, int cores);

}  // namespace loom::runtime
