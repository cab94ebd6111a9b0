// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024). The backward is split into BI
// (gradient of the input: on the critical path to the previous stage) and BW (gradient of the
// weights: nobody waits for it). Stage s keeps 1F1B's order with BI in place of B, runs each BW
// right after a BI but lagging s micro-batches behind, and finishes the s deferred BWs at the end,
// where 1F1B would sit idle. In flight: K_s + s = S micro-batches at most on every stage, 1F1B's
// peak. docs/schedules.md derives the bubble.
#include <loom/schedule/generators.h>

#include <algorithm>

#include <loom/base/error.h>

namespace loom::schedule {

Schedule zb_h1(int stages, int microbatches) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, "a schedule needs at least one stage and one micro-batch");
  Schedule schedule = empty_schedule(ScheduleKind::zb_h1, stages, microbatches);
  for (int s = 0; s < stages; ++s) {
    const int warmup = std::min(stages - s, microbatches);
    const int lag = s;  // BWs deferred by this stage
    std::vector<Action> program;
    for (int m = 0; m < warmup; ++m) program.push_back(forward(m));
    int next_weight = 0;
    for (int m = 0; m < microbatches; ++m) {
      program.push_back(backward_input(m));
      if (m - lag >= 0) program.push_back(backward_weight(next_weight++));
      if (m + warmup < microbatches) program.push_back(forward(m + warmup));
    }
    while (next_weight < microbatches) program.push_back(backward_weight(next_weight++));
    program.push_back(allreduce());
    program.push_back(optimizer_step());
    schedule.programs.push_back(std::move(program));
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
