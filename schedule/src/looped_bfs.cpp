// Looped breadth-first pipeline (Lamy-Poirier, "Breadth-First Pipeline Parallelism", 2022; PyTorch's
// ScheduleLoopedBFS). Each rank holds v chunks in the looped placement (chunk c of stage s is
// virtual stage c·S + s, the IR's default). A rank runs the forwards of every micro-batch on its
// chunk 0, then on chunk 1, ... (breadth first: a chunk's whole batch before the next chunk), then the
// backwards chunk by chunk in reverse, each chunk's micro-batches last-in first-out as PyTorch does.
// Every stage holds all v·M chunk activations at the turn, like GPipe, but the fill and drain cross
// chunk-sized steps, so the bubble is interleaved 1F1B's (S − 1)/(vM + S − 1) for M ≥ S.
// docs/schedules.md derives it.
#include <loom/schedule/generators.h>

#include <loom/base/error.h>

namespace loom::schedule {

Schedule looped_bfs(int stages, int microbatches, int chunks) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, "a schedule needs at least one stage and one micro-batch");
  LOOM_CHECK(chunks >= 1, "looped-bfs needs at least one chunk per stage, got ", chunks);
  Schedule schedule = empty_schedule(ScheduleKind::looped_bfs, stages, microbatches, chunks);
  for (int s = 0; s < stages; ++s) {
    std::vector<Action> program;
    for (int c = 0; c < chunks; ++c)
      for (int m = 0; m < microbatches; ++m) program.push_back(forward(m, c));
    for (int c = chunks - 1; c >= 0; --c)
      for (int m = microbatches - 1; m >= 0; --m) program.push_back(backward(m, c));
    program.push_back(allreduce());
    program.push_back(optimizer_step());
    schedule.programs.push_back(std::move(program));
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
