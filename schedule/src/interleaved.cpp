// Interleaved 1F1B (Narayanan et al., SC 2021, Megatron-LM): each rank holds v chunks (virtual
// stages c·S + s), so a micro-batch visits every rank v times and the fill/drain bubble shrinks by
// v at the price of v× more boundary transfers. Micro-batches enter in groups of S: the forward
// steps go chunk 0 of micro-batches 0..S−1, chunk 1 of the same, ..., then the next group.
#include <loom/schedule/generators.h>

#include <algorithm>

#include <loom/base/error.h>

namespace loom::schedule {

namespace {

// The k-th forward (or backward) step of a rank: which micro-batch and chunk. Backwards visit the
// chunks in reverse.
Action interleaved_step(int k, int stages, int chunks, bool is_forward) {
  const int group = k / (stages * chunks);
  const int in_group = k % (stages * chunks);
  int chunk = in_group / stages;
  if (!is_forward) chunk = chunks - 1 - chunk;
  const int microbatch = group * stages + in_group % stages;
  return is_forward ? forward(microbatch, chunk) : backward(microbatch, chunk);
}

}  // namespace

Schedule interleaved(int stages, int microbatches, int chunks) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, "a schedule needs at least one stage and one micro-batch");
  LOOM_CHECK(chunks >= 1, "interleaved needs at least one chunk per stage, got ", chunks);
  LOOM_CHECK(microbatches % stages == 0, "interleaved 1F1B needs the number of micro-batches (", microbatches,
                  ") to be a multiple of the number of stages (", stages,
                  "): micro-batches go through the chunks in groups of S");
  Schedule schedule = empty_schedule(ScheduleKind::interleaved, stages, microbatches, chunks);
  const int total = microbatches * chunks;
  for (int s = 0; s < stages; ++s) {
    // Megatron's warm-up: enough forwards that the first backward of the last chunk can arrive.
    const int warmup = std::min(total, (stages - s - 1) * 2 + (chunks - 1) * stages + 1);
    std::vector<Action> program;
    for (int k = 0; k < warmup; ++k) program.push_back(interleaved_step(k, stages, chunks, true));
    for (int k = 0; k < total; ++k) {
      program.push_back(interleaved_step(k, stages, chunks, false));
      if (warmup + k < total) program.push_back(interleaved_step(warmup + k, stages, chunks, true));
    }
    program.push_back(allreduce());
    program.push_back(optimizer_step());
    schedule.programs.push_back(std::move(program));
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
