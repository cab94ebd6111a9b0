// Straggler warning (issue 31): which ranks are much slower than the others, step after step.
//
// In a synchronous pipeline every rank's step takes the same wall time (each waits for the
// slowest), so what tells a slow rank apart is its *busy* time: the step's time on that rank not
// spent waiting for the others (Executor's StepResult::busy_seconds). A rank whose busy time is over
// `ratio` x the median over all ranks for `steps` steps in a row is reported, once per such streak.
#pragma once

#include <vector>

namespace loom::runtime {

class StragglerDetector {
 public:
  explicit StragglerDetector(double ratio = 1.5, int steps = 3);

  // One step's busy seconds, per world rank; returns the ranks whose streak reaches `steps` now.
  std::vector<int> observe(const std::vector<double>& busy_seconds);
  // The median of the last step observed.
  double median() const { return median_; }
  double ratio() const { return ratio_; }
  int steps() const { return steps_; }

 private:
  double ratio_;
  int steps_;
  double median_ = 0;
  std::vector<int> streak_;  // per rank: consecutive steps over the threshold
};

}  // namespace loom::runtime
