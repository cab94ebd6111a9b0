// GPipe (Huang et al., 2019): every forward, then every backward. Simple and flush-synchronous,
// but each stage holds all M micro-batches' activations at the turn.
#include <loom/schedule/generators.h>

#include <loom/base/error.h>

namespace loom::schedule {

Schedule gpipe(int stages, int microbatches) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, "a schedule needs at least one stage and one micro-batch");
  Schedule schedule = empty_schedule(ScheduleKind::gpipe, stages, microbatches);
  for (int s = 0; s < stages; ++s) {
    std::vector<Action> program;
    for (int m = 0; m < microbatches; ++m) program.push_back(forward(m));
    for (int m = 0; m < microbatches; ++m) program.push_back(backward(m));
    program.push_back(allreduce());
    program.push_back(optimizer_step());
    schedule.programs.push_back(std::move(program));
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
