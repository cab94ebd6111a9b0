// DualPipeV (DeepSeek-V3's DualPipe folded into a V, as in DeepSeek's dualpipev.py and PyTorch's
// ScheduleDualPipeV): 2 chunks per stage in a V (v_placement), a zero-bubble warm-up, then a steady
// state of overlapped pairs — the forward of one chunk run together with the full backward of the
// other (overlap.h) — and a cool-down whose second half splits the backward into BI and BW so the
// BWs fill the drain. The phases of stage r (S stages, N micro-batches):
//   1. 2(S − r − 1) forwards on chunk 0
//   2. r + 1 times: F on chunk 0, F on chunk 1
//   3. S − r − 1 times: BI on chunk 1, the oldest pending BW, F on chunk 1
//   4. N − 2S + r + 1 times: the pair (F chunk 0; B chunk 1), then the pair (F chunk 1; B chunk 0)
//      (the last stage runs its first F chunk 0 and B chunk 1 one after the other, not overlapped,
//      which shortens the bubble, as DeepSeek's code does)
//   5. S − r − 1 times: B on chunk 1, then the pair (F chunk 1; B chunk 0)
//   6. r + 1 times: a backward on chunk 1 then one on chunk 0, full B in the first half and BI in
//      the second (odd stages switch one action earlier)
//   7. S − r − 1 times: the oldest pending BW, then a backward (B or BI as phase 6 ended) on chunk 0
//   8. the remaining BWs
// Phase 4 needs N ≥ 2S − 1; for fewer micro-batches the order is made for N = 2S − 1 and the
// micro-batches beyond M are dropped (a pair left with one half runs it alone). docs/schedules.md
// derives its bubble and peak.
#include <loom/schedule/generators.h>

#include <algorithm>
#include <deque>

#include <loom/base/error.h>

namespace loom::schedule {

namespace {

class DualPipeVOrder {
 public:
  std::vector<Action> order;

  void f(int chunk) { order.push_back(forward(forwards_[chunk]++, chunk)); }
  void b(int chunk) { order.push_back(backward(backwards_[chunk]++, chunk)); }
  void bi(int chunk) {
    pending_.push_back(backward_weight(backwards_[chunk], chunk));
    order.push_back(backward_input(backwards_[chunk]++, chunk));
  }
  void backward_of(int chunk, bool split) { split ? bi(chunk) : b(chunk); }
  void bw() {  // the oldest BW whose BI has run, if any
    if (pending_.empty()) return;
    order.push_back(pending_.front());
    pending_.pop_front();
  }
  void pair(int forward_chunk, int backward_chunk) {
    f(forward_chunk);
    order.back().overlap = Overlap::forward_half;
    b(backward_chunk);
    order.back().overlap = Overlap::backward_half;
  }
  bool complete(int n) const {
    return pending_.empty() && forwards_[0] == n && forwards_[1] == n && backwards_[0] == n && backwards_[1] == n;
  }

 private:
  int forwards_[2] = {0, 0}, backwards_[2] = {0, 0};  // next micro-batch per chunk
  std::deque<Action> pending_;
};

std::vector<Action> dualpipev_order(int stages, int n, int r) {
  DualPipeVOrder o;
  const int later = stages - r - 1;  // stages after r
  for (int k = 0; k < 2 * later; ++k) o.f(0);
  for (int k = 0; k < r + 1; ++k) {
    o.f(0);
    o.f(1);
  }
  for (int k = 0; k < later; ++k) {
    o.bi(1);
    o.bw();
    o.f(1);
  }
  for (int k = 0; k < n - 2 * stages + r + 1; ++k) {
    if (k == 0 && r == stages - 1) {
      o.f(0);
      o.b(1);
    } else {
      o.pair(0, 1);
    }
    o.pair(1, 0);
  }
  for (int k = 0; k < later; ++k) {
    o.b(1);
    o.pair(1, 0);
  }
  bool split = false;
  for (int k = 0; k < r + 1; ++k) {
    if (k == (r + 1) / 2 && r % 2 == 1) split = true;
    o.backward_of(1, split);
    if (k == (r + 1) / 2 && r % 2 == 0) split = true;
    o.backward_of(0, split);
  }
  for (int k = 0; k < later; ++k) {
    o.bw();
    o.backward_of(0, split);
  }
  for (int k = 0; k < r + 1; ++k) o.bw();
  LOOM_CHECK(o.complete(n), "internal: dualpipev order of stage ", r, " is incomplete");
  return std::move(o.order);
}

// Drops the micro-batches beyond M; a pair that loses one half keeps the other as a plain action.
std::vector<Action> first_microbatches(std::vector<Action> order, int microbatches) {
  std::vector<Action> kept;
  for (std::size_t i = 0; i < order.size(); ++i) {
    Action a = order[i];
    if (a.microbatch >= microbatches) continue;
    const bool forward_alone = a.overlap == Overlap::forward_half && order[i + 1].microbatch >= microbatches;
    const bool backward_alone = a.overlap == Overlap::backward_half && order[i - 1].microbatch >= microbatches;
    if (forward_alone || backward_alone) a.overlap = Overlap::none;
    kept.push_back(a);
  }
  return kept;
}

}  // namespace

Schedule dualpipev(int stages, int microbatches) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, "dualpipev needs at least one stage and one micro-batch (got S = ",
             stages, ", M = ", microbatches, ")");
  const int n = std::max(microbatches, 2 * stages - 1);
  Schedule schedule = empty_schedule(ScheduleKind::dualpipev, stages, microbatches, 2);
  for (int r = 0; r < stages; ++r)
    schedule.programs.push_back(first_microbatches(dualpipev_order(stages, n, r), microbatches));
  for (auto& program : schedule.programs) {
    program.push_back(allreduce());
    program.push_back(optimizer_step());
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
