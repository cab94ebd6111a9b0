// ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 3). ZB-H1 keeps
// 1F1B's memory; ZB-H2 spends more of it to remove the bubble: stage s runs 2(S − s) − 1 forwards
// before its first BI (1F1B: S − s), so every stage holds up to 2S − 1 micro-batches, and the
// first BI comes back exactly when the warm-up forwards end (equal costs). Each stage then works without a gap
// from its first forward: stage s runs from time s to s + M(T_F + T_BI + T_BW) with equal costs, a
// parallelogram.
//
// Stage s runs, for x = 0, 1, 2, ..., the triple
//     F(x)  BI(x − 2(S − 1 − s))  BW(x − L_s)
// leaving out the micro-batches outside 0..M−1: BI lags F by 2(S − 1 − s) (the round trip to the
// last stage and back), BW lags F by L = 2(S − 1) on every stage (the paper's, for M ≥ 2(S − 1)),
// so stage s runs its BWs 2s behind its BIs and the deferred ones at the end (the tail). Dropping
// micro-batches ≥ M from the schedule for a larger M removes only dependencies, so every M ≥ 1 is
// valid; but with M < 2(S − 1) the forwards that would fill the middle stages' slots between two
// BIs are missing, so there L = M (L_s = max(L, 2(S − 1 − s)): a BW never before its BI). That
// fills them with BWs and keeps the step at ZB-H1's for equal costs (the literal rule is a few
// slots slower there, e.g. 16 instead of 15 T for S = M = 4); every stage holds min(M, 2S − 1)
// micro-batches at most.
//
// The paper makes the parallelogram bubble-free across steps by replacing the optimizer's
// synchronization with post-validation (stage s starts the next step while later stages finish
// this one). loom's STEP is synchronous, one per stage after AR, so the staggered start and end
// remain: with equal costs the step is M·3T + (S − 1)T, the same as ZB-H1 (docs/schedules.md).
#include <loom/schedule/generators.h>

#include <algorithm>

#include <loom/base/error.h>

namespace loom::schedule {

Schedule zb_h2(int stages, int microbatches) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, "a schedule needs at least one stage and one micro-batch");
  Schedule schedule = empty_schedule(ScheduleKind::zb_h2, stages, microbatches);
  const int weight_lag = std::min(2 * (stages - 1), microbatches);
  for (int s = 0; s < stages; ++s) {
    const int input_lag = 2 * (stages - 1 - s);
    const int stage_weight_lag = std::max(weight_lag, input_lag);  // a BW never before its BI
    std::vector<Action> program;
    auto in_range = [&](int m) { return m >= 0 && m < microbatches; };
    for (int x = 0; x < microbatches + stage_weight_lag; ++x) {
      if (in_range(x)) program.push_back(forward(x));
      if (in_range(x - input_lag)) program.push_back(backward_input(x - input_lag));
      if (in_range(x - stage_weight_lag)) program.push_back(backward_weight(x - stage_weight_lag));
    }
    program.push_back(allreduce());
    program.push_back(optimizer_step());
    schedule.programs.push_back(std::move(program));
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
