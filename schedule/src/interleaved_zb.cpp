// Interleaved zero bubble (PyTorch's ScheduleInterleavedZeroBubble, the ZB-1P schedule of Qi et
// al. on v chunks per rank in the looped placement, chunk c of stage s = virtual stage c·S + s).
// Interleaved 1F1B's order with the backward split into BI and BW:
//
// - Micro-batches go through the chunks in rounds of R: forward step k is chunk (k / R) mod v of
//   micro-batch (k / (R·v))·R + k mod R; backward step k the same with the chunks reversed. R is
//   PyTorch's micro-batches per round: M / max(1, ⌊M / S⌋), so R = S when M is a multiple of S,
//   R = M when M < S, and M must be a multiple of ⌊M / S⌋ (M = 10 on S = 4: R = 5; M = 9: refused)
//   unless v = 1, where the rounds change nothing.
// - Stage s runs W_s = min((v − 1)R + S − 1 − s, vM) warm-up forwards, then for k = 0, 1, ...:
//   the next forward step (while any are left), backward step k as BI, and from k = s on the BW of
//   backward step k − s; the s BWs still owed come at the end. So BW lags BI by s steps, as in
//   ZB-H1 (which this is for v = 1), and fills the drain.
//
// The warm-up is (v − 1)R + S − s forwards up to the first BI, S − s − 1 fewer than Megatron's
// interleaved 1F1B (whose steady state puts the backward first): every stage holds at most
// min((v − 1)R + S, vM) chunk activations. docs/schedules.md has the bubble.
#include <loom/schedule/generators.h>

#include <algorithm>

#include <loom/base/error.h>

namespace loom::schedule {

namespace {

// The k-th forward or backward step of a rank with rounds of `round` micro-batches.
int step_microbatch(int k, int round, int chunks) { return (k / (round * chunks)) * round + k % round; }
int step_chunk(int k, int round, int chunks, bool is_forward) {
  const int chunk = (k / round) % chunks;
  return is_forward ? chunk : chunks - 1 - chunk;
}

}  // namespace

Schedule interleaved_zb(int stages, int microbatches, int chunks) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, "a schedule needs at least one stage and one micro-batch");
  LOOM_CHECK(chunks >= 1, "interleaved-zb needs at least one chunk per stage, got ", chunks);
  // With one chunk the rounds change nothing (the order is ZB-H1's), so any M goes.
  const int rounds = chunks == 1 ? 1 : std::max(1, microbatches / stages);
  LOOM_CHECK(microbatches % rounds == 0, "interleaved-zb needs the number of micro-batches (", microbatches,
             ") to split into max(1, M / S) = ", rounds, " rounds of equal size (S = ", stages,
             "): micro-batches go through the chunks in rounds");
  const int round = microbatches / rounds;
  Schedule schedule = empty_schedule(ScheduleKind::interleaved_zb, stages, microbatches, chunks);
  const int total = microbatches * chunks;
  auto step = [&](int k, Op op) {
    const bool is_forward = op == Op::Forward;
    return Action{op, step_microbatch(k, round, chunks), step_chunk(k, round, chunks, is_forward), -1};
  };
  for (int s = 0; s < stages; ++s) {
    const int warmup = std::min((chunks - 1) * round + stages - 1 - s, total);
    const int lag = s;
    std::vector<Action> program;
    for (int k = 0; k < warmup; ++k) program.push_back(step(k, Op::Forward));
    int next_weight = 0;
    for (int k = 0; k < total; ++k) {
      if (warmup + k < total) program.push_back(step(warmup + k, Op::Forward));
      program.push_back(step(k, Op::BackwardInput));
      if (k >= lag) program.push_back(step(next_weight++, Op::BackwardWeight));
    }
    while (next_weight < total) program.push_back(step(next_weight++, Op::BackwardWeight));
    program.push_back(allreduce());
    program.push_back(optimizer_step());
    schedule.programs.push_back(std::move(program));
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
