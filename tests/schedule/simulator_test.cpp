// The simulator against closed forms (bubble formulas of docs/schedules.md) and hand-worked
// timelines with communication.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/simulator.h>
#include <loom/schedule/text.h>

using namespace loom::schedule;

namespace {

const TimedAction& find_action(const SimulationResult& result, int stage, const std::string& token) {
  for (const TimedAction& t : result.timeline)
    if (t.stage == stage && to_string(t.action, true) == token) return t;
  FAIL("no " << token << " on stage " << stage);
  return result.timeline.front();
}

}  // namespace

TEST_CASE("balanced stages, free links: GPipe and 1F1B bubble = (S-1)/(M+S-1)") {
  for (double backward : {1.0, 2.0})
    for (int stages : {1, 2, 3, 4, 8})
      for (int microbatches : {1, 2, 4, 7, 8, 16, 32}) {
        const CostModel costs = uniform_costs(1.0, backward);
        const double expected = static_cast<double>(stages - 1) / (microbatches + stages - 1);
        for (const Schedule& schedule : {gpipe(stages, microbatches), dapple(stages, microbatches)}) {
          const SimulationResult result = simulate(schedule, costs);
          INFO(schedule.name << " S=" << stages << " M=" << microbatches);
          CHECK(result.bubble_fraction == Approx(expected).margin(1e-12));
          CHECK(result.step_ms == Approx((microbatches + stages - 1) * (1.0 + backward)));
        }
      }
}

TEST_CASE("interleaved: the bubble shrinks by v, (S-1)/(vM+S-1)") {
  for (int stages : {2, 4, 8})
    for (int chunks : {2, 3, 4})
      for (int groups : {1, 2, 4}) {
        const int microbatches = groups * stages;
        const SimulationResult result = simulate(interleaved(stages, microbatches, chunks), uniform_costs(1, 2));
        INFO("S=" << stages << " M=" << microbatches << " v=" << chunks);
        CHECK(result.bubble_fraction ==
              Approx(static_cast<double>(stages - 1) / (chunks * microbatches + stages - 1)).margin(1e-12));
      }
}

TEST_CASE("zb-h1 with F = BI = BW: bubble (S-1)/(3M+S-1), a third of 1F1B's bubble time") {
  for (int stages : {2, 3, 4, 8})
    for (int microbatches : {stages, stages + 1, 2 * stages, 32}) {
      CostModel costs = uniform_costs(1, 2);  // BI = BW = backward / 2 = F
      const SimulationResult zb = simulate(zb_h1(stages, microbatches), costs);
      const SimulationResult one_f_one_b = simulate(dapple(stages, microbatches), costs);
      INFO("S=" << stages << " M=" << microbatches);
      CHECK(zb.bubble_fraction ==
            Approx(static_cast<double>(stages - 1) / (3 * microbatches + stages - 1)).margin(1e-12));
      // Idle time per stage: (S-1)·T against 1F1B's (S-1)·3T.
      CHECK(zb.step_ms - 3 * microbatches == Approx((stages - 1) * 1.0));
      CHECK(one_f_one_b.step_ms - 3 * microbatches == Approx((stages - 1) * 3.0));
    }
}

TEST_CASE("zb-h1 with any F, BI, BW and M >= S: step = M(F+BI+BW) + (S-1)·max(F, BI, F+BI-BW)") {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> quarter_ms(1, 16);
  for (int trial = 0; trial < 300; ++trial) {
    const int stages = 1 + trial % 8;
    const int microbatches = stages + static_cast<int>(random() % 12);
    StageCost cost;
    cost.forward_ms = quarter_ms(random) / 4.0;
    cost.backward_input_ms = quarter_ms(random) / 4.0;
    cost.backward_weight_ms = quarter_ms(random) / 4.0;
    CostModel costs;
    costs.stages = {cost};
    const double f = cost.forward_ms, bi = cost.backward_input_ms, bw = cost.backward_weight_ms;
    const double expected = microbatches * (f + bi + bw) + (stages - 1) * std::max({f, bi, f + bi - bw});
    INFO("S=" << stages << " M=" << microbatches << " F=" << f << " BI=" << bi << " BW=" << bw);
    CHECK(simulate(zb_h1(stages, microbatches), costs).step_ms == Approx(expected));
  }
}

TEST_CASE("hand-worked timeline with link bandwidth, latency, allreduce and step costs") {
  // S = 2, M = 1, F = 1, B = 2; 1 MB over 1 GB/s = 1 ms plus 0.5 ms latency; AR 0.25, STEP 0.1.
  StageCost cost;
  cost.forward_ms = 1;
  cost.backward_ms = 2;
  cost.allreduce_ms = 0.25;
  cost.step_ms = 0.1;
  cost.boundary_bytes = 1e6;
  CostModel costs;
  costs.stages = {cost};
  costs.links = {Link{1e9, 0.5}};
  const SimulationResult result = simulate(gpipe(2, 1), costs);
  // stage 0: F0 [0,1], SA0 arrives 2.5; stage 1: F0 [2.5,3.5], B0 [3.5,5.5], SG0 arrives 7;
  // stage 0: B0 [7,9], AR [9,9.25], STEP [9.25,9.35]; stage 1: AR, STEP end at 5.85.
  CHECK(find_action(result, 1, "RA0c0").end_ms == Approx(2.5));
  CHECK(find_action(result, 1, "F0c0").start_ms == Approx(2.5));
  CHECK(find_action(result, 0, "RG0c0").start_ms == Approx(1.0));
  CHECK(find_action(result, 0, "B0c0").start_ms == Approx(7.0));
  CHECK(result.stages[0].end_ms == Approx(9.35));
  CHECK(result.stages[1].end_ms == Approx(5.85));
  CHECK(result.step_ms == Approx(9.35));
  CHECK(result.stages[0].busy_ms == Approx(3.35));
  CHECK(result.stages[0].compute_ms == Approx(3.0));
  CHECK(result.bubble_fraction == Approx(1 - 6.7 / (2 * 9.35)));
  REQUIRE(result.transfers.size() == 2);
  CHECK(result.transfers[1].from_stage == 1);
  CHECK(result.transfers[1].arrival_ms == Approx(7.0));
}

TEST_CASE("messages on one link go one at a time") {
  // S = 2, M = 2, F = B = 1, 3 MB at 1 GB/s = 3 ms per transfer, no latency.
  StageCost cost;
  cost.forward_ms = 1;
  cost.backward_ms = 1;
  cost.boundary_bytes = 3e6;
  CostModel costs;
  costs.stages = {cost};
  costs.links = {Link{1e9, 0}};
  const SimulationResult result = simulate(gpipe(2, 2), costs);
  // SA0 sent at 1 arrives 4; SA1 sent at 2 waits for the link until 4, arrives 7.
  // Stage 1: F0 [4,5], F1 [7,8], B0 [8,9] -> SG0 arrives 12, B1 [9,10] -> SG1 queued until 12, arrives 15.
  // Stage 0: B0 [12,13], B1 [15,16].
  CHECK(find_action(result, 1, "F1c0").start_ms == Approx(7));
  CHECK(find_action(result, 0, "B0c0").start_ms == Approx(12));
  CHECK(find_action(result, 0, "B1c0").start_ms == Approx(15));
  CHECK(result.step_ms == Approx(16));
}

TEST_CASE("unbalanced stages given per stage") {
  CostModel costs;
  costs.stages.resize(2);
  costs.stages[0].forward_ms = 1;
  costs.stages[0].backward_ms = 2;
  costs.stages[1].forward_ms = 3;
  costs.stages[1].backward_ms = 6;
  // Stage 1: F0 [1,4], F1 [4,7], B0 [7,13], B1 [13,19]; stage 0: B0 [13,15], B1 [19,21].
  const SimulationResult result = simulate(gpipe(2, 2), costs);
  CHECK(result.step_ms == Approx(21));
  CHECK(result.stages[1].idle_ms == Approx(21 - 18));
  CHECK(result.bubble_fraction == Approx(1 - 24.0 / 42));
  costs.stages.resize(3);
  CHECK_THROWS_WITH(simulate(gpipe(2, 2), costs), Catch::Contains("3 stage costs for a 2-stage schedule"));
}

TEST_CASE("peak activation memory per stage, in micro-batches and bytes") {
  CostModel costs = uniform_costs(1, 2);
  costs.stages[0].activation_bytes = 100;
  const SimulationResult gpipe_result = simulate(gpipe(4, 8), costs);
  const SimulationResult dapple_result = simulate(dapple(4, 8), costs);
  const SimulationResult interleaved_result = simulate(interleaved(4, 8, 2), costs);
  for (int s = 0; s < 4; ++s) {
    CHECK(gpipe_result.stages[s].peak_activation_bytes == Approx(800));
    CHECK(dapple_result.stages[s].peak_activation_units == Approx(4 - s));
    CHECK(dapple_result.stages[s].peak_activation_bytes == Approx(100 * (4 - s)));
  }
  // Interleaved stage 0 holds 11 chunk activations, each half a micro-batch of the stage.
  CHECK(interleaved_result.stages[0].peak_inflight == 11);
  CHECK(interleaved_result.stages[0].peak_activation_bytes == Approx(550));
}

// Issue 29: what a stage holds besides its in-flight activations (StageCost::ChunkMemory), walked in
// program order. zb-h1, S = 2, M = 2; each micro-batch keeps 10 bytes; a forward peaks 5 above what
// it leaves, a BI 4 above what was held (plus the output gradient it received: 3 on stage 0), a BW 6;
// a BI leaves 2 for its BW.
//   stage 0: F0 F1 BI0 BW0 BI1 BW1 -> 15, 25, 20+3+4, 22+6 = 28 (then 10), 10+3+4, 12+6: peak 28
//   stage 1: F0 BI0 F1 BI1 BW0 BW1 -> 15, 10+4 (then 12), 22+5 = 27, 22+4 (then 24), 24+6 = 30: peak 30
TEST_CASE("peak activation memory with working sets, received gradients and BI holds") {
  CostModel costs;
  for (int s = 0; s < 2; ++s) {
    StageCost c;
    c.chunk_forward_ms = {1};
    c.chunk_backward_ms = {2};
    c.chunk_activation_bytes = {10};
    c.chunk_boundary_bytes = {0};
    StageCost::ChunkMemory m;
    m.forward_extra = 5;
    m.input_extra = 4;
    m.weight_extra = 6;
    m.backward_extra = 100;  // a fused B: zb-h1 runs none
    m.split_held = 2;
    m.gradient_receive = s == 0 ? 3 : 0;
    c.chunk_memory = {m};
    costs.stages.push_back(c);
  }
  const Schedule schedule = zb_h1(2, 2);
  const SimulationResult result = simulate(schedule, costs);
  CHECK(result.stages[0].peak_activation_bytes == Approx(28));
  CHECK(result.stages[1].peak_activation_bytes == Approx(30));
  CHECK(stage_peak_activation_bytes(schedule, 1, costs.stages[1]) == Approx(30));
  // A BI that frees 3 of its micro-batch's 10 bytes instead (split_held -3, as a transformer
  // layer's BI frees what only it needed):
  //   stage 0: F0 F1 BI0 BW0 -> 15, 25, 20+3+4 = 27 (then 17), 17+6 = 23: peak 27
  //   stage 1: F0 BI0 F1 BI1 BW0 BW1 -> 15, 14 (then 7), 7+10+5 = 22, 17+4 (then 14), 14+6, 7+6: peak 22
  for (StageCost& c : costs.stages) c.chunk_memory[0].split_held = -3;
  const SimulationResult freeing = simulate(schedule, costs);
  CHECK(freeing.stages[0].peak_activation_bytes == Approx(27));
  CHECK(freeing.stages[1].peak_activation_bytes == Approx(22));
  // Without them, the in-flight activations alone: two micro-batches.
  for (StageCost& c : costs.stages) c.chunk_memory.clear();
  CHECK(simulate(schedule, costs).stages[0].peak_activation_bytes == Approx(20));
  // Per-chunk BI and BW times replace the half-B split: stage 1's BI 0.5, BW 1.5.
  costs.stages[1].chunk_backward_input_ms = {0.5};
  costs.stages[1].chunk_backward_weight_ms = {1.5};
  const SimulationResult split = simulate(schedule, costs);
  double input = 0, weight = 0;
  for (const TimedAction& t : split.timeline)
    if (t.stage == 1 && t.action.op == Op::BackwardInput) input += t.end_ms - t.start_ms;
    else if (t.stage == 1 && t.action.op == Op::BackwardWeight) weight += t.end_ms - t.start_ms;
  CHECK(input == Approx(1.0));
  CHECK(weight == Approx(3.0));
}

TEST_CASE("pipedream steady state: one minibatch per F + B, stashed versions = minibatches in flight") {
  const SimulationResult result = simulate(pipedream(4, 32), uniform_costs(1, 2));
  CHECK(result.ms_per_microbatch == Approx(3));
  for (int s = 0; s < 4; ++s) CHECK(result.stages[s].peak_weight_versions == 4 - s);
  const SimulationResult two_bw = simulate(pipedream_2bw(4, 8, 4), uniform_costs(1, 2));
  CHECK(two_bw.ms_per_microbatch == Approx(3));
  for (int s = 0; s < 4; ++s) CHECK(two_bw.stages[s].peak_weight_versions == 2);
}

TEST_CASE("DAPPLE: a deeper warm-up hides slow links") {
  CostModel costs = uniform_costs(1, 2);
  costs.stages[0].boundary_bytes = 1e6;
  costs.links = {Link{1e9, 1.0}};  // 2 ms per transfer, comparable to compute
  const double default_k = simulate(dapple(4, 16), costs).step_ms;
  const double deeper_k = simulate(dapple(4, 16, {8}), costs).step_ms;
  CHECK(deeper_k < default_k);
}

TEST_CASE("a deadlocked schedule cannot be simulated") {
  const Schedule schedule = parse_schedule(
      "stage 0: F0 SA0 RG0 B0 F1 SA1 RG1 B1 AR STEP\n"
      "stage 1: RA0 F0 RA1 F1 B0 SG0 B1 SG1 AR STEP\n");
  CHECK_THROWS_WITH(simulate(schedule, uniform_costs(1, 1)), Catch::Contains("deadlock"));
}
