// V-shaped schedules: 2 chunks per stage placed in a V (v_placement: chunk 0 of stage s holds virtual
// stage s, chunk 1 holds 2S − 1 − s), so a micro-batch goes down the pipeline on the chunks 0 and
// back up on the chunks 1, and the turn at the bottom (virtual stages S − 1 → S, both on stage S − 1)
// is a local hand-over. Stage 0 holds the first and the last virtual stage, so the loss is computed
// where the micro-batch entered and its backward starts there at once. All three split the backward
// into BI and BW (zero bubble, Qi et al.) and end with AR and STEP after the last BW.
//
//  - ZB-V ("Zero Bubble Pipeline Parallelism", ICLR 2024, section 6; PyTorch's
//    ScheduleZBVZeroBubble): warm-up, a steady F-BI-BW pattern on both chunks, cool-down; at most 2S
//    chunk activations in flight (1F1B's S micro-batches).
//  - V-Half and V-Min ("Pipeline Parallelism with Controllable Memory", NeurIPS 2024): a building
//    block (when micro-batch 0 runs F and BI of each chunk on each stage, in slots of one chunk
//    action) repeated every 6 slots; the BWs fill each stage's two free slots of the 6. The block's
//    lifespans set the memory: about a half and a third of 1F1B's.
//
// docs/schedules.md shows the programs and derives their bubbles and peaks.
#include <loom/schedule/generators.h>

#include <algorithm>
#include <deque>
#include <optional>

#include <loom/base/error.h>

namespace loom::schedule {

namespace {

void check_sizes(ScheduleKind kind, int stages, int microbatches) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, schedule_kind_name(kind), " needs at least one stage and one micro-batch (got S = ",
             stages, ", M = ", microbatches, ")");
}

Schedule v_schedule(ScheduleKind kind, int stages, int microbatches, std::vector<std::vector<Action>> programs) {
  Schedule schedule = empty_schedule(kind, stages, microbatches, 2);
  schedule.programs = std::move(programs);
  for (auto& program : schedule.programs) {
    program.push_back(allreduce());
    program.push_back(optimizer_step());
  }
  return with_communication(std::move(schedule));
}

// ZB-V's compute order on stage r, following PyTorch's ScheduleZBVZeroBubble. The phases are sized
// for n = max(M, 2S − 1) micro-batches, the fewest that fill the V; the micro-batches beyond M are
// then dropped (removing whole micro-batches keeps every dependency, so the order stays valid).
std::vector<Action> zb_v_order(int stages, int microbatches, int r) {
  const int n = std::max(microbatches, 2 * stages - 1);
  std::vector<Action> order;
  int forwards[2] = {0, 0}, inputs[2] = {0, 0}, weights[2] = {0, 0};  // next micro-batch, per chunk
  auto f = [&](int c) { order.push_back(forward(forwards[c]++, c)); };
  auto bi = [&](int c) { order.push_back(backward_input(inputs[c]++, c)); };
  auto bw = [&](int c) { order.push_back(backward_weight(weights[c]++, c)); };
  // Warm-up: 2(S − r) − 1 forwards on chunk 0, then r times a forward on each chunk, so that chunk
  // 1's first forward (micro-batch 0 coming back up) is due right when the stage gets to it.
  for (int k = 0; k < 2 * (stages - r) - 1; ++k) f(0);
  for (int k = 0; k < r; ++k) {
    f(1);
    f(0);
  }
  // Chunk 1's first S − r micro-batches: forward, input gradient, weight gradient.
  for (int k = 0; k < stages - r; ++k) {
    f(1);
    bi(1);
    bw(1);
  }
  // Steady state: F BI BW on chunk 0, then on chunk 1, until every forward is done.
  while (forwards[1] < forwards[0] || forwards[0] < n) {
    if (forwards[0] < n) f(0);
    bi(0);
    bw(0);
    f(1);
    bi(1);
    bw(1);
  }
  // Cool-down: the remaining input gradients first (the previous stages wait for them), the weight
  // gradients in the gaps and at the end.
  for (int k = 0; k < r; ++k) {
    bi(0);
    bi(1);
  }
  for (int k = 0; k < stages - r; ++k) {
    bi(0);
    bw(0);
  }
  while (weights[1] < inputs[1]) bw(1);
  while (weights[0] < inputs[0]) bw(0);
  LOOM_CHECK(forwards[0] == n && forwards[1] == n && inputs[0] == n && inputs[1] == n && weights[0] == n &&
                 weights[1] == n,
             "internal: zb-v order of stage ", r, " is incomplete");
  order.erase(std::remove_if(order.begin(), order.end(), [&](const Action& a) { return a.microbatch >= microbatches; }),
              order.end());
  return order;
}

// A building block: the slots (one chunk action each) in which micro-batch 0 runs, on one stage,
// the forward of chunk 0, the forward of chunk 1, the input gradient of chunk 1 and that of chunk 0.
// Micro-batch m runs 6m slots later. The four slots differ modulo 6, so the two left over in every
// 6 are the stage's BW slots.
struct Block {
  int forward0 = 0, forward1 = 0, input1 = 0, input0 = 0;
};

constexpr int kPeriod = 6;  // slots per micro-batch: F, BI, BW on each of two chunks

// V-Min: every virtual stage starts its forward one slot after the previous one and its input
// gradient one slot after the next one, the shortest lifespans the dependencies allow (the round
// trip of 4S slots); for S divisible by 3 the input gradients start 2 slots later, or stage s's
// forward of chunk 0 and input gradient of chunk 1 would share a slot modulo 6.
Block v_min_block(int stages, int s) {
  const int gap = stages % 3 == 0 ? 2 : 0;
  return {s, 2 * stages - 1 - s, 2 * stages + s + gap, 4 * stages - 1 - s + gap};
}

// V-Half: chunk 0's forward and chunk 1's input gradient advance two slots per stage (on the way
// down), chunk 1's forward and chunk 0's input gradient one (on the way up); a round trip of about
// 6S slots, for S even 3 slots later for the same reason as V-Min's gap.
Block v_half_block(int stages, int s) {
  const int gap = stages % 2 == 0 ? 3 : 0;
  return {2 * s, 3 * stages - 2 - s, 3 * stages - 1 + 2 * s + gap, 6 * stages - 2 - s + gap};
}

// The compute order of one stage that repeats `block` for M micro-batches: the block's actions in
// slot order, and in every slot the block leaves free the oldest BW whose BI has run (if any); the
// BWs still pending after the last slot at the end.
std::vector<Action> block_order(const Block& block, int microbatches) {
  const int offsets[4] = {block.forward0, block.forward1, block.input1, block.input0};
  for (int i = 0; i < 4; ++i)
    for (int k = i + 1; k < 4; ++k)
      LOOM_CHECK(offsets[i] % kPeriod != offsets[k] % kPeriod, "internal: building block slots ", offsets[i], " and ",
                 offsets[k], " collide");
  const int last = *std::max_element(offsets, offsets + 4) + kPeriod * (microbatches - 1);
  std::vector<std::optional<Action>> slots(static_cast<std::size_t>(last + 1));
  for (int m = 0; m < microbatches; ++m) {
    slots[static_cast<std::size_t>(block.forward0 + kPeriod * m)] = forward(m, 0);
    slots[static_cast<std::size_t>(block.forward1 + kPeriod * m)] = forward(m, 1);
    slots[static_cast<std::size_t>(block.input1 + kPeriod * m)] = backward_input(m, 1);
    slots[static_cast<std::size_t>(block.input0 + kPeriod * m)] = backward_input(m, 0);
  }
  std::vector<Action> order;
  std::deque<Action> pending;  // BWs whose BI has run
  for (const auto& slot : slots) {
    if (slot) {
      order.push_back(*slot);
      if (slot->op == Op::BackwardInput) pending.push_back(backward_weight(slot->microbatch, slot->chunk));
    } else if (!pending.empty()) {
      order.push_back(pending.front());
      pending.pop_front();
    }
  }
  order.insert(order.end(), pending.begin(), pending.end());
  return order;
}

template <typename MakeBlock>
Schedule from_blocks(ScheduleKind kind, int stages, int microbatches, MakeBlock make_block) {
  check_sizes(kind, stages, microbatches);
  std::vector<std::vector<Action>> programs;
  for (int s = 0; s < stages; ++s) programs.push_back(block_order(make_block(stages, s), microbatches));
  return v_schedule(kind, stages, microbatches, std::move(programs));
}

}  // namespace

Schedule zb_v(int stages, int microbatches) {
  check_sizes(ScheduleKind::zb_v, stages, microbatches);
  std::vector<std::vector<Action>> programs;
  for (int r = 0; r < stages; ++r) programs.push_back(zb_v_order(stages, microbatches, r));
  return v_schedule(ScheduleKind::zb_v, stages, microbatches, std::move(programs));
}

Schedule v_half(int stages, int microbatches) { return from_blocks(ScheduleKind::v_half, stages, microbatches, v_half_block); }

Schedule v_min(int stages, int microbatches) { return from_blocks(ScheduleKind::v_min, stages, microbatches, v_min_block); }

}  // namespace loom::schedule
