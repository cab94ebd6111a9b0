// ZB-H2, looped BFS and interleaved zero bubble (issue 28): the programs worked out by hand from
// each schedule's rule (docs/schedules.md), validity over a grid of sizes, and the peak activations
// (validator) and step time (simulator) against the closed forms of docs/schedules.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/simulator.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

#include "require_programs.h"

using namespace loom::schedule;
using loom::schedule::test::require_programs;

namespace {

// PyTorch's micro-batches per round for interleaved-zb: M / max(1, ⌊M/S⌋), or 0 if M is refused
// (never with one chunk, where the rounds change nothing).
int round_size(int stages, int microbatches, int chunks) {
  const int rounds = chunks == 1 ? 1 : std::max(1, microbatches / stages);
  return microbatches % rounds == 0 ? microbatches / rounds : 0;
}

// All three kinds for one size (interleaved-zb only where its rounds are equal).
std::vector<Schedule> new_schedules(int stages, int microbatches, int chunks) {
  std::vector<Schedule> schedules = {looped_bfs(stages, microbatches, chunks)};
  if (chunks == 1) schedules.push_back(zb_h2(stages, microbatches));
  if (round_size(stages, microbatches, chunks) > 0) schedules.push_back(interleaved_zb(stages, microbatches, chunks));
  return schedules;
}

}  // namespace

TEST_CASE("zb-h2 S=4 M=8: 2(S-s)-1 forwards before the first BI, BW 2(S-1) behind F") {
  // Stage s runs F(x) BI(x - 2(S-1-s)) BW(x - 6) for x = 0..13, leaving out micro-batches outside 0..7.
  require_programs(zb_h2(4, 8), {
      "F0 F1 F2 F3 F4 F5 F6 BI0 BW0 F7 BI1 BW1 BI2 BW2 BI3 BW3 BI4 BW4 BI5 BW5 BI6 BW6 BI7 BW7 AR STEP",
      "F0 F1 F2 F3 F4 BI0 F5 BI1 F6 BI2 BW0 F7 BI3 BW1 BI4 BW2 BI5 BW3 BI6 BW4 BI7 BW5 BW6 BW7 AR STEP",
      "F0 F1 F2 BI0 F3 BI1 F4 BI2 F5 BI3 F6 BI4 BW0 F7 BI5 BW1 BI6 BW2 BI7 BW3 BW4 BW5 BW6 BW7 AR STEP",
      "F0 BI0 F1 BI1 F2 BI2 F3 BI3 F4 BI4 F5 BI5 F6 BI6 BW0 F7 BI7 BW1 BW2 BW3 BW4 BW5 BW6 BW7 AR STEP",
  });
  // 2S - 1 = 7 micro-batches on every stage: (2S - 1)/S of 1F1B's stage-0 peak.
  const ValidationReport h2 = validate(zb_h2(4, 8)), one_f_one_b = validate(dapple(4, 8));
  CHECK(one_f_one_b.stages[0].peak_inflight == 4);
  for (int s = 0; s < 4; ++s) CHECK(h2.stages[s].peak_inflight == 7);
}

TEST_CASE("zb-h2 S=4 M=4: with M < 2(S-1) the BW lag is M, so BWs fill the missing forwards' slots") {
  // L = min(6, 4) = 4, L_s = max(4, 2(3 - s)) = 6, 4, 4, 4.
  require_programs(zb_h2(4, 4), {
      "F0 F1 F2 F3 BI0 BW0 BI1 BW1 BI2 BW2 BI3 BW3 AR STEP",
      "F0 F1 F2 F3 BI0 BW0 BI1 BW1 BI2 BW2 BI3 BW3 AR STEP",
      "F0 F1 F2 BI0 F3 BI1 BI2 BW0 BI3 BW1 BW2 BW3 AR STEP",
      "F0 BI0 F1 BI1 F2 BI2 F3 BI3 BW0 BW1 BW2 BW3 AR STEP",
  });
  // The step of ZB-H1 (15 with unit costs), not the literal rule's 16.
  CHECK(simulate(zb_h2(4, 4), uniform_costs(1, 2)).step_ms == Approx(15));
}

TEST_CASE("zb-h2 full form S=2 M=3") {
  // L = 2: stage 0 runs F0 F1 F2 BI0 BW0 BI1 BW1 BI2 BW2, stage 1 F0 BI0 F1 BI1 F2 BI2 BW0 BW1 BW2.
  require_programs(zb_h2(2, 3), {
      "F0 SA0 F1 SA1 F2 SA2 RG0 BI0 BW0 RG1 BI1 BW1 RG2 BI2 BW2 AR STEP",
      "RA0 F0 BI0 SG0 RA1 F1 BI1 SG1 RA2 F2 BI2 SG2 BW0 BW1 BW2 AR STEP",
  }, TextStyle::Full);
}

TEST_CASE("looped-bfs: every forward of chunk 0, then of chunk 1, then the backwards in reverse") {
  const std::string s2m4 =
      "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 F3c1 "
      "B3c1 B2c1 B1c1 B0c1 B3c0 B2c0 B1c0 B0c0 AR STEP";
  require_programs(looped_bfs(2, 4, 2), {s2m4, s2m4});
  const std::string s4m8 =
      "F0c0 F1c0 F2c0 F3c0 F4c0 F5c0 F6c0 F7c0 F0c1 F1c1 F2c1 F3c1 F4c1 F5c1 F6c1 F7c1 "
      "B7c1 B6c1 B5c1 B4c1 B3c1 B2c1 B1c1 B0c1 B7c0 B6c0 B5c0 B4c0 B3c0 B2c0 B1c0 B0c0 AR STEP";
  require_programs(looped_bfs(4, 8, 2), {s4m8, s4m8, s4m8, s4m8});
  // Every stage holds all v·M = 16 chunks (8 micro-batches) at the turn, like GPipe.
  for (const StageMemory& memory : validate(looped_bfs(4, 8, 2)).stages) CHECK(memory.peak_inflight == 16);
}

TEST_CASE("looped-bfs full form S=2 M=2 v=2: chunk 1 of stage 0 receives from stage 1's chunk 0") {
  // Virtual stages 0 (stage 0 c0), 1 (stage 1 c0), 2 (stage 0 c1), 3 (stage 1 c1, the last).
  require_programs(looped_bfs(2, 2, 2), {
      "F0c0 SA0c0 F1c0 SA1c0 RA0c1 F0c1 SA0c1 RA1c1 F1c1 SA1c1 "
      "RG1c1 B1c1 SG1c1 RG0c1 B0c1 SG0c1 RG1c0 B1c0 RG0c0 B0c0 AR STEP",
      "RA0c0 F0c0 SA0c0 RA1c0 F1c0 SA1c0 RA0c1 F0c1 RA1c1 F1c1 "
      "B1c1 SG1c1 B0c1 SG0c1 RG1c0 B1c0 SG1c0 RG0c0 B0c0 SG0c0 AR STEP",
  }, TextStyle::Full);
}

TEST_CASE("interleaved-zb S=4 M=8 v=2: PyTorch's ZB-1P order") {
  // Rounds of R = 4: forward steps (0-3 c0) (0-3 c1) (4-7 c0) (4-7 c1), backward steps the same with
  // the chunks reversed. Stage s: (v-1)R + S - 1 - s = 7, 6, 5, 4 warm-up forwards, then per step k
  // the next forward, BI of backward step k and BW of backward step k - s.
  require_programs(interleaved_zb(4, 8, 2), {
      "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 F3c1 BI0c1 BW0c1 F4c0 BI1c1 BW1c1 F5c0 BI2c1 BW2c1 "
      "F6c0 BI3c1 BW3c1 F7c0 BI0c0 BW0c0 F4c1 BI1c0 BW1c0 F5c1 BI2c0 BW2c0 F6c1 BI3c0 BW3c0 "
      "F7c1 BI4c1 BW4c1 BI5c1 BW5c1 BI6c1 BW6c1 BI7c1 BW7c1 BI4c0 BW4c0 BI5c0 BW5c0 BI6c0 BW6c0 "
      "BI7c0 BW7c0 AR STEP",
      "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 BI0c1 F3c1 BI1c1 BW0c1 F4c0 BI2c1 BW1c1 F5c0 BI3c1 BW2c1 "
      "F6c0 BI0c0 BW3c1 F7c0 BI1c0 BW0c0 F4c1 BI2c0 BW1c0 F5c1 BI3c0 BW2c0 F6c1 BI4c1 BW3c0 "
      "F7c1 BI5c1 BW4c1 BI6c1 BW5c1 BI7c1 BW6c1 BI4c0 BW7c1 BI5c0 BW4c0 BI6c0 BW5c0 BI7c0 BW6c0 "
      "BW7c0 AR STEP",
      "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 BI0c1 F2c1 BI1c1 F3c1 BI2c1 BW0c1 F4c0 BI3c1 BW1c1 F5c0 BI0c0 "
      "BW2c1 F6c0 BI1c0 BW3c1 F7c0 BI2c0 BW0c0 F4c1 BI3c0 BW1c0 F5c1 BI4c1 BW2c0 F6c1 BI5c1 BW3c0 "
      "F7c1 BI6c1 BW4c1 BI7c1 BW5c1 BI4c0 BW6c1 BI5c0 BW7c1 BI6c0 BW4c0 BI7c0 BW5c0 BW6c0 BW7c0 "
      "AR STEP",
      "F0c0 F1c0 F2c0 F3c0 F0c1 BI0c1 F1c1 BI1c1 F2c1 BI2c1 F3c1 BI3c1 BW0c1 F4c0 BI0c0 BW1c1 "
      "F5c0 BI1c0 BW2c1 F6c0 BI2c0 BW3c1 F7c0 BI3c0 BW0c0 F4c1 BI4c1 BW1c0 F5c1 BI5c1 BW2c0 "
      "F6c1 BI6c1 BW3c0 F7c1 BI7c1 BW4c1 BI4c0 BW5c1 BI5c0 BW6c1 BI6c0 BW7c1 BI7c0 BW4c0 BW5c0 "
      "BW6c0 BW7c0 AR STEP",
  });
  // vS = 8 chunks on every stage = S micro-batches, 1F1B's stage-0 peak (Megatron's interleaved: 11).
  for (const StageMemory& memory : validate(interleaved_zb(4, 8, 2)).stages) CHECK(memory.peak_inflight == 8);
}

TEST_CASE("interleaved-zb: rounds of M / max(1, M/S), M < S allowed, one chunk is zb-h1") {
  // S = 2, M = 1 < S: one round of one micro-batch.
  require_programs(interleaved_zb(2, 1, 2), {
      "F0c0 F0c1 BI0c1 BW0c1 BI0c0 BW0c0 AR STEP",
      "F0c0 F0c1 BI0c1 BI0c0 BW0c1 BW0c0 AR STEP",
  });
  // S = 4, M = 10: 2 rounds of 5.
  const Schedule ten = interleaved_zb(4, 10, 2);
  CHECK(program_text(ten, 0).rfind("F0c0 F1c0 F2c0 F3c0 F4c0 F0c1 F1c1 F2c1 F3c1 BI0c1 BW0c1 F4c1 ", 0) == 0);
  CHECK(validate(ten).ok());
  CHECK_THROWS_WITH(interleaved_zb(4, 9, 2),
                    Catch::Contains("number of micro-batches (9) to split into max(1, M / S) = 2 rounds"));
  for (int stages : {1, 2, 3, 4, 8})
    for (int microbatches : {1, 2, 3, 4, 7, 8, 16}) {
      INFO("S=" << stages << " M=" << microbatches);
      CHECK(interleaved_zb(stages, microbatches, 1).programs == zb_h1(stages, microbatches).programs);
    }
}

TEST_CASE("zb-h2, looped-bfs and interleaved-zb are valid over a range of sizes") {
  for (int stages : {1, 2, 3, 4, 5, 8})
    for (int microbatches : {1, 2, 3, 4, 5, 7, 8, 9, 10, 16})
      for (int chunks : {1, 2, 3})
        for (const Schedule& schedule : new_schedules(stages, microbatches, chunks)) {
          const ValidationReport report = validate(schedule);
          INFO(schedule.name << " S=" << stages << " M=" << microbatches << " v=" << schedule.chunks << ": "
                             << (report.ok() ? "" : report.errors.front()));
          CHECK(report.ok());
        }
}

TEST_CASE("peak activations: zb-h2 min(M, 2S-1), looped-bfs vM, interleaved-zb min((v-1)R + S, vM)") {
  for (int stages : {1, 2, 3, 4, 5, 8})
    for (int microbatches : {1, 2, 3, 4, 5, 7, 8, 10, 16})
      for (int chunks : {1, 2, 3})
        for (const Schedule& schedule : new_schedules(stages, microbatches, chunks)) {
          int expected = 0;
          if (schedule.name == "zb-h2") expected = std::min(microbatches, 2 * stages - 1);
          if (schedule.name == "looped-bfs") expected = chunks * microbatches;
          if (schedule.name == "interleaved-zb")
            expected = std::min((chunks - 1) * round_size(stages, microbatches, chunks) + stages, chunks * microbatches);
          const ValidationReport report = validate(schedule);
          REQUIRE(report.ok());
          for (int s = 0; s < stages; ++s) {
            INFO(schedule.name << " S=" << stages << " M=" << microbatches << " v=" << chunks << " stage " << s);
            CHECK(report.stages[s].peak_inflight == expected);
          }
        }
}

TEST_CASE("zb-h2 with F = BI = BW: ZB-H1's step, 3M + S - 1 for M >= S, 2(M + S - 1) + 1 below") {
  for (int stages : {1, 2, 3, 4, 5, 8})
    for (int microbatches = 1; microbatches <= 2 * stages + 3; ++microbatches) {
      const CostModel costs = uniform_costs(1, 2);  // BI = BW = F = 1
      const double step = microbatches >= stages ? 3 * microbatches + stages - 1 : 2 * (microbatches + stages - 1) + 1;
      const SimulationResult h2 = simulate(zb_h2(stages, microbatches), costs);
      INFO("S=" << stages << " M=" << microbatches);
      CHECK(h2.step_ms == Approx(step));
      CHECK(h2.bubble_fraction == Approx(1 - 3.0 * microbatches / step).margin(1e-12));
      CHECK(h2.step_ms == Approx(simulate(zb_h1(stages, microbatches), costs).step_ms));
    }
  // The docs' case: S = 4, M = 8, bubble (S-1)/(3M+S-1) = 3/27.
  CHECK(simulate(zb_h2(4, 8), uniform_costs(1, 2)).bubble_fraction == Approx(1.0 / 9));
}

TEST_CASE("zb-h2 with any F, BI, BW: at least M(F+BI+BW) + (S-1)F and never slower than zb-h1") {
  std::mt19937 random(11);
  std::uniform_int_distribution<int> quarter_ms(1, 16);
  for (int trial = 0; trial < 300; ++trial) {
    const int stages = 1 + trial % 8;
    const int microbatches = 1 + static_cast<int>(random() % 24);
    StageCost cost;
    cost.forward_ms = quarter_ms(random) / 4.0;
    cost.backward_input_ms = quarter_ms(random) / 4.0;
    cost.backward_weight_ms = quarter_ms(random) / 4.0;
    CostModel costs;
    costs.stages = {cost};
    const double f = cost.forward_ms, bi = cost.backward_input_ms, bw = cost.backward_weight_ms;
    const double h2 = simulate(zb_h2(stages, microbatches), costs).step_ms;
    INFO("S=" << stages << " M=" << microbatches << " F=" << f << " BI=" << bi << " BW=" << bw);
    CHECK(h2 >= microbatches * (f + bi + bw) + (stages - 1) * f - 1e-9);
    CHECK(h2 <= simulate(zb_h1(stages, microbatches), costs).step_ms + 1e-9);
  }
}

TEST_CASE("looped-bfs: step (v·max(M,S) + min(M,S) - 1)(F+B)/v, bubble (S-1)/(vM+S-1) for M >= S") {
  for (double forward : {1.0, 0.75})
    for (double backward : {1.0, 2.0})
      for (int stages : {1, 2, 3, 4, 8})
        for (int microbatches : {1, 2, 3, 4, 7, 8, 16})
          for (int chunks : {1, 2, 3, 4}) {
            const SimulationResult result =
                simulate(looped_bfs(stages, microbatches, chunks), uniform_costs(forward, backward));
            const int big = std::max(microbatches, stages), small = std::min(microbatches, stages);
            const double units = chunks * big + small - 1;  // chunk-sized steps of F + B
            INFO("F=" << forward << " B=" << backward << " S=" << stages << " M=" << microbatches << " v=" << chunks);
            CHECK(result.step_ms == Approx(units * (forward + backward) / chunks));
            CHECK(result.bubble_fraction == Approx(1 - chunks * microbatches / units).margin(1e-12));
            if (microbatches >= stages)
              CHECK(result.bubble_fraction ==
                    Approx(static_cast<double>(stages - 1) / (chunks * microbatches + stages - 1)).margin(1e-12));
          }
}

TEST_CASE("interleaved-zb with F = BI = BW: step 3M + (S-1)/v for M >= S, bubble (S-1)/(3vM+S-1)") {
  for (int stages : {1, 2, 3, 4, 5, 8})
    for (int microbatches = 1; microbatches <= 20; ++microbatches)
      for (int chunks : {1, 2, 3, 4}) {
        if (round_size(stages, microbatches, chunks) == 0) continue;
        const SimulationResult result =
            simulate(interleaved_zb(stages, microbatches, chunks), uniform_costs(1, 2));
        const double m = microbatches, s = stages, v = chunks;
        const double step = std::max({3 * m + (s - 1) / v, 2 * m + s + (s - 1) / v, 2 * s + (2 * m - 1) / v});
        INFO("S=" << stages << " M=" << microbatches << " v=" << chunks);
        CHECK(result.step_ms == Approx(step));
        if (microbatches >= stages) {
          CHECK(result.step_ms == Approx(3 * m + (s - 1) / v));
          CHECK(result.bubble_fraction == Approx((s - 1) / (3 * v * m + s - 1)).margin(1e-12));
        }
      }
}

TEST_CASE("make_schedule builds zb-h2, looped-bfs and interleaved-zb by name") {
  ScheduleOptions options;
  options.stages = 4;
  options.microbatches = 8;
  options.chunks = 3;
  for (const std::string kind : {"zb-h2", "looped-bfs", "interleaved-zb"}) {
    options.kind = kind;
    const Schedule schedule = make_schedule(options);
    CHECK(schedule.name == kind);
    CHECK(schedule.chunks == (kind == "zb-h2" ? 1 : 3));
    CHECK(validate(schedule).ok());
  }
  options.kind = "interleaved-zb";
  options.microbatches = 9;
  CHECK_THROWS_AS(make_schedule(options), loom::Error);
}
