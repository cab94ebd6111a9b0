// PipeDream's asynchronous 1F1B (Narayanan et al., SOSP 2019) and its double-buffered variant
// PipeDream-2BW (Narayanan et al., ICML 2021). There is no flush: the program covers a window of
// minibatches, each stage updates its weights as soon as a minibatch's backward is done there, and
// every F/B names the weight version it runs with so the executor can stash and restore it.
#include <loom/schedule/generators.h>

#include <map>
#include <utility>

#include <loom/base/error.h>
#include "one_f_one_b.h"

namespace loom::schedule {

Schedule pipedream(int stages, int minibatches, const std::vector<int>& warmup) {
  const std::vector<int> depths = warmup_depths(stages, minibatches, warmup);
  Schedule schedule = empty_schedule(ScheduleKind::pipedream, stages, minibatches);
  for (int s = 0; s < stages; ++s) {
    std::vector<Action> program;
    std::map<int, int> version_of;  // minibatch -> version its forward used
    int steps = 0;
    for (Action action : detail::one_f_one_b_order(minibatches, depths[s])) {
      if (action.op == Op::Forward) version_of[action.microbatch] = steps;
      action.version = version_of.at(action.microbatch);
      program.push_back(action);
      if (action.op == Op::Backward) {
        program.push_back(allreduce());
        program.push_back(optimizer_step());
        ++steps;
      }
    }
    schedule.programs.push_back(std::move(program));
  }
  return with_communication(std::move(schedule));
}

Schedule pipedream_2bw(int stages, int microbatches, int minibatches, const std::vector<int>& warmup) {
  LOOM_CHECK(minibatches >= 1, "pipedream-2bw needs at least one minibatch in the window, got ", minibatches);
  LOOM_CHECK(microbatches >= stages, "pipedream-2bw needs at least as many micro-batches per minibatch as stages (got ",
                  microbatches, " < ", stages, "): with fewer, a stage would need a third weight version");
  const int total = microbatches * minibatches;
  const std::vector<int> depths = warmup_depths(stages, total, warmup);
  Schedule schedule = empty_schedule(ScheduleKind::pipedream_2bw, stages, total);
  for (int s = 0; s < stages; ++s) {
    std::vector<Action> program;
    for (Action action : detail::one_f_one_b_order(total, depths[s])) {
      const int minibatch = action.microbatch / microbatches;
      action.version = std::max(minibatch - 1, 0);
      program.push_back(action);
      if (action.op == Op::Backward && action.microbatch % microbatches == microbatches - 1) {
        program.push_back(allreduce());
        program.push_back(optimizer_step());
      }
    }
    schedule.programs.push_back(std::move(program));
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
