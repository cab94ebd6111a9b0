// V-shaped schedules (ZB-V, V-Half, V-Min) and the explicit chunk placement they need: programs
// worked out by hand from each schedule's rule (docs/schedules.md), validity over a grid of sizes,
// the placement in the text form and the validator, local hand-overs in the simulator, and the
// step time and activation peaks against the closed forms of docs/schedules.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/simulator.h>
#include <loom/schedule/text.h>
#include <loom/schedule/trace.h>
#include <loom/schedule/validator.h>

#include "require_programs.h"

using namespace loom::schedule;
using loom::schedule::test::first_error;
using loom::schedule::test::require_programs;

namespace {

// Every chunk action costs one slot: F = 2, B = 4 per stage, so F = BI = BW = 1 per chunk.
CostModel slot_costs() { return uniform_costs(2, 4); }

// The closed forms of docs/schedules.md, in slots.
int zb_v_step(int S, int M) { return std::max(6 * M + S - 1, 4 * M + 4 * S - 2); }
int v_half_step(int S, int M) {
  if (M == 1) return 4 * S + 2;
  if (S % 2 == 1) return std::max(6 * M + 7 * (S - 1) / 2, 5 * M + 4 * S - 3);
  return std::max(6 * M + (7 * S - 4) / 2, 5 * M + 4 * S - 1);
}
int v_min_step(int S, int M) {
  if (S == 1) return 6 * M;
  if (M == 1) return 4 * S + 1;
  return 6 * M + 4 * S - 5 + (S % 3 == 0 ? 2 : 0);
}
int zb_v_peak(int S, int M, int s) { return std::min({2 * S, M + 1 + s, 2 * M}); }
int v_half_peak(int S) { return 2 * (S / 2) + 2; }
int v_min_peak(int S, int s) { return 2 * (S / 3) + 2 + (S % 3 == 2 && s % 3 != 0 ? 2 : 0); }

}  // namespace

TEST_CASE("v_placement: chunk 0 of stage s holds virtual stage s, chunk 1 holds 2S-1-s") {
  const Schedule schedule = zb_v(4, 8);
  CHECK(schedule.chunks == 2);
  CHECK(schedule.placement == std::vector<int>{0, 1, 2, 3, 7, 6, 5, 4});
  CHECK(schedule.virtual_stage(1, 1) == 6);
  CHECK(schedule.stage_of(6) == 1);
  CHECK(schedule.chunk_of(6) == 1);
  CHECK(schedule.stage_of(3) == 3);
  CHECK(schedule.stage_of(4) == 3);  // the bottom of the V: both on the last stage
  CHECK(schedule.is_first(0, 0));
  CHECK(schedule.is_last(0, 1));
  CHECK_FALSE(schedule.is_last(3, 0));
}

TEST_CASE("zb-v S=2 M=4: PyTorch's warm-up, F BI BW per chunk, cool-down") {
  // Stage r: 2(S - r) - 1 forwards of chunk 0, r pairs (F chunk 1, F chunk 0), S - r triples
  // (F BI BW on chunk 1), then F BI BW on chunk 0 and on chunk 1 until the forwards are done; the
  // cool-down runs r pairs of BIs, S - r (BI chunk 0, oldest BW chunk 0), the rest of the BWs.
  require_programs(zb_v(2, 4), {
      "F0c0 F1c0 F2c0 "  "F0c1 BI0c1 BW0c1 F1c1 BI1c1 BW1c1 "
      "F3c0 BI0c0 BW0c0 F2c1 BI2c1 BW2c1 "  "BI1c0 BW1c0 F3c1 BI3c1 BW3c1 "
      "BI2c0 BW2c0 BI3c0 BW3c0 AR STEP",
      "F0c0 "  "F0c1 F1c0 "  "F1c1 BI0c1 BW0c1 "
      "F2c0 BI0c0 BW0c0 F2c1 BI1c1 BW1c1 "  "F3c0 BI1c0 BW1c0 F3c1 BI2c1 BW2c1 "
      "BI2c0 BI3c1 "  "BI3c0 BW2c0 "  "BW3c1 BW3c0 AR STEP",
  });
}

TEST_CASE("zb-v S=4 M=8") {
  require_programs(zb_v(4, 8), {
      "F0c0 F1c0 F2c0 F3c0 F4c0 F5c0 F6c0 "
      "F0c1 BI0c1 BW0c1 F1c1 BI1c1 BW1c1 F2c1 BI2c1 BW2c1 F3c1 BI3c1 BW3c1 "
      "F7c0 BI0c0 BW0c0 F4c1 BI4c1 BW4c1 BI1c0 BW1c0 F5c1 BI5c1 BW5c1 "
      "BI2c0 BW2c0 F6c1 BI6c1 BW6c1 BI3c0 BW3c0 F7c1 BI7c1 BW7c1 "
      "BI4c0 BW4c0 BI5c0 BW5c0 BI6c0 BW6c0 BI7c0 BW7c0 AR STEP",
      "F0c0 F1c0 F2c0 F3c0 F4c0 "  "F0c1 F5c0 "
      "F1c1 BI0c1 BW0c1 F2c1 BI1c1 BW1c1 F3c1 BI2c1 BW2c1 "
      "F6c0 BI0c0 BW0c0 F4c1 BI3c1 BW3c1 F7c0 BI1c0 BW1c0 F5c1 BI4c1 BW4c1 "
      "BI2c0 BW2c0 F6c1 BI5c1 BW5c1 BI3c0 BW3c0 F7c1 BI6c1 BW6c1 "
      "BI4c0 BI7c1 "  "BI5c0 BW4c0 BI6c0 BW5c0 BI7c0 BW6c0 "  "BW7c1 BW7c0 AR STEP",
      "F0c0 F1c0 F2c0 "  "F0c1 F3c0 F1c1 F4c0 "
      "F2c1 BI0c1 BW0c1 F3c1 BI1c1 BW1c1 "
      "F5c0 BI0c0 BW0c0 F4c1 BI2c1 BW2c1 F6c0 BI1c0 BW1c0 F5c1 BI3c1 BW3c1 "
      "F7c0 BI2c0 BW2c0 F6c1 BI4c1 BW4c1 BI3c0 BW3c0 F7c1 BI5c1 BW5c1 "
      "BI4c0 BI6c1 BI5c0 BI7c1 "  "BI6c0 BW4c0 BI7c0 BW5c0 "  "BW6c1 BW7c1 BW6c0 BW7c0 AR STEP",
      "F0c0 "  "F0c1 F1c0 F1c1 F2c0 F2c1 F3c0 "  "F3c1 BI0c1 BW0c1 "
      "F4c0 BI0c0 BW0c0 F4c1 BI1c1 BW1c1 F5c0 BI1c0 BW1c0 F5c1 BI2c1 BW2c1 "
      "F6c0 BI2c0 BW2c0 F6c1 BI3c1 BW3c1 F7c0 BI3c0 BW3c0 F7c1 BI4c1 BW4c1 "
      "BI4c0 BI5c1 BI5c0 BI6c1 BI6c0 BI7c1 "  "BI7c0 BW4c0 "  "BW5c1 BW6c1 BW7c1 BW5c0 BW6c0 BW7c0 AR STEP",
  });
}

TEST_CASE("v-min S=2 M=4: the building block repeated every 6 slots, BWs in the free slots") {
  // Stage 0's block: F chunk 0 in slot 0, F chunk 1 in 3, BI chunk 1 in 4, BI chunk 0 in 7 (mod 6:
  // 0 3 4 1, BW slots 2 and 5); stage 1's: 1 2 5 6 (mod 6: 1 2 5 0, BW slots 3 and 4).
  require_programs(v_min(2, 4), {
      "F0c0 F0c1 BI0c1 BW0c1 F1c0 BI0c0 BW0c0 F1c1 BI1c1 BW1c1 F2c0 BI1c0 BW1c0 F2c1 BI2c1 BW2c1 "
      "F3c0 BI2c0 BW2c0 F3c1 BI3c1 BW3c1 BI3c0 BW3c0 AR STEP",
      "F0c0 F0c1 BI0c1 BI0c0 F1c0 F1c1 BW0c1 BW0c0 BI1c1 BI1c0 F2c0 F2c1 BW1c1 BW1c0 BI2c1 BI2c0 "
      "F3c0 F3c1 BW2c1 BW2c0 BI3c1 BI3c0 BW3c1 BW3c0 AR STEP",
  });
}

TEST_CASE("v-half S=2 M=4: the building block repeated every 6 slots, BWs in the free slots") {
  // S even, so the input gradients come 3 slots later: stage 0's block is 0 4 8 13 (mod 6: 0 4 2 1,
  // BW slots 3 and 5), stage 1's 2 3 10 12 (mod 6: 2 3 4 0, BW slots 1 and 5).
  require_programs(v_half(2, 4), {
      "F0c0 F0c1 F1c0 BI0c1 BW0c1 F1c1 F2c0 BI0c0 BI1c1 BW0c0 F2c1 BW1c1 F3c0 BI1c0 BI2c1 BW1c0 "
      "F3c1 BW2c1 BI2c0 BI3c1 BW2c0 BW3c1 BI3c0 BW3c0 AR STEP",
      "F0c0 F0c1 F1c0 F1c1 BI0c1 BW0c1 BI0c0 BW0c0 F2c0 F2c1 BI1c1 BW1c1 BI1c0 BW1c0 "
      "F3c0 F3c1 BI2c1 BW2c1 BI2c0 BW2c0 BI3c1 BW3c1 BI3c0 BW3c0 AR STEP",
  });
}

TEST_CASE("full form: the bottom of the V is a local hand-over, still written as SA/RA and SG/RG") {
  // One micro-batch: virtual stages 0 (stage 0) -> 1 (stage 1) -> 2 (stage 1, local) -> 3 (stage 0).
  require_programs(zb_v(2, 1), {
      "F0c0 SA0c0 RA0c1 F0c1 BI0c1 SG0c1 BW0c1 RG0c0 BI0c0 BW0c0 AR STEP",
      "RA0c0 F0c0 SA0c0 RA0c1 F0c1 SA0c1 RG0c1 BI0c1 SG0c1 BW0c1 RG0c0 BI0c0 SG0c0 BW0c0 AR STEP",
  }, TextStyle::Full);
}

TEST_CASE("every V-shaped generator is valid over a grid of sizes, M < S included") {
  for (int stages = 1; stages <= 8; ++stages)
    for (int microbatches = 1; microbatches <= 20; ++microbatches)
      for (const Schedule& schedule : {zb_v(stages, microbatches), v_half(stages, microbatches), v_min(stages, microbatches)}) {
        INFO(schedule.name << " S=" << stages << " M=" << microbatches);
        const ValidationReport report = validate(schedule);
        INFO((report.errors.empty() ? "" : report.errors.front()));
        CHECK(report.ok());
        CHECK(schedule.placement == v_placement(stages));
      }
  CHECK_THROWS_WITH(zb_v(0, 4), Catch::Contains("zb-v needs at least one stage and one micro-batch"));
  CHECK_THROWS_WITH(v_min(4, 0), Catch::Contains("v-min needs at least one stage and one micro-batch"));
  for (const char* kind : {"zb-v", "v-half", "v-min"}) {
    ScheduleOptions options;
    options.kind = kind;
    options.stages = 4;
    options.microbatches = 8;
    CHECK(make_schedule(options).name == kind);
  }
}

TEST_CASE("placement in the text form: a placement line, parsed back") {
  const Schedule schedule = zb_v(4, 3);
  const std::string text = to_text(schedule);
  CHECK_THAT(text, Catch::StartsWith("schedule zb-v\nplacement 0,7 1,6 2,5 3,4\nstage 0: "));
  CHECK(placement_text(dapple(2, 2)) == "");
  for (int stages : {1, 2, 3, 4, 7})
    for (int microbatches : {1, 2, 5, 8})
      for (const Schedule& s : {zb_v(stages, microbatches), v_half(stages, microbatches), v_min(stages, microbatches)}) {
        INFO(s.name << " S=" << stages << " M=" << microbatches);
        CHECK(parse_schedule(to_text(s), "round-trip") == s);
      }
  // The looped schedules have no placement line and parse back with an empty placement.
  CHECK(to_text(interleaved(2, 4, 2)).find("placement") == std::string::npos);
  CHECK(parse_schedule(to_text(interleaved(2, 4, 2))).placement.empty());

  // Hand-written: S = 1, two chunks in a row (the looped order, given explicitly) and a comment.
  const Schedule one = parse_schedule(
      "schedule mine\n"
      "placement 0,1   # chunk 0 then chunk 1\n"
      "stage 0: F0c0 SA0c0 RA0c1 F0c1 B0c1 SG0c1 RG0c0 B0c0 AR STEP\n");
  CHECK(one.chunks == 2);
  CHECK(one.placement == std::vector<int>{0, 1});
  CHECK(validate(one).ok());
  // v comes from the placement even where the programs do not use every chunk.
  CHECK(parse_schedule("placement 1,0,2\nstage 0: F0 B0 AR STEP\n").chunks == 3);
}

TEST_CASE("placement parse errors name the source, line and column") {
  const std::string stages2 = "stage 0: F0c0\nstage 1: F0c0\n";
  CHECK_THROWS_WITH(parse_schedule("placement 0,3 1,x\n" + stages2, "p.txt"),
                    Catch::StartsWith("p.txt:1:17: bad placement entry '1,x' (stage 1)"));
  CHECK_THROWS_WITH(parse_schedule("placement 0,3 1,\n" + stages2, "p.txt"),
                    Catch::StartsWith("p.txt:1:16: bad placement entry '1,' (stage 1)"));
  CHECK_THROWS_WITH(parse_schedule("placement 0,3 1\n" + stages2, "p.txt"),
                    Catch::StartsWith("p.txt:1:15: placement: stage 1 has 1 chunks but stage 0 has 2"));
  CHECK_THROWS_WITH(parse_schedule("placement 0,3 1,2 4,5\n" + stages2, "p.txt"),
                    Catch::StartsWith("p.txt:1:1: the placement names 3 stages, but the schedule has 2 stage lines"));
  CHECK_THROWS_WITH(parse_schedule("placement 0,3 1,3\n" + stages2, "p.txt"),
                    Catch::StartsWith("p.txt:1:17: placement: virtual stage 3 is given twice (stage 0 chunk 1 and stage 1 chunk 1)"));
  CHECK_THROWS_WITH(parse_schedule("placement 0,3 1,4\n" + stages2, "p.txt"),
                    Catch::StartsWith("p.txt:1:17: placement: virtual stage 4 (stage 1 chunk 1) is outside 0..3"));
  CHECK_THROWS_WITH(parse_schedule("placement 0 1\nstage 0: F0c1\nstage 1: F0\n", "p.txt"),
                    Catch::StartsWith("p.txt:1:1: the placement gives each stage 1 chunks, but the programs use chunk 1"));
  CHECK_THROWS_WITH(parse_schedule("placement\n" + stages2, "p.txt"),
                    Catch::StartsWith("p.txt:1:1: 'placement' must be followed by"));
  CHECK_THROWS_WITH(parse_schedule("stage 0: F0c0\nplacement 0,1\n", "p.txt"),
                    Catch::StartsWith("p.txt:2:1: 'placement ...' must come once, before the stage lines"));
  CHECK_THROWS_WITH(parse_schedule("placement 0,1\nplacement 0,1\nstage 0: F0c0\n", "p.txt"),
                    Catch::StartsWith("p.txt:2:1: 'placement ...' must come once"));
}

TEST_CASE("the validator rejects a bad placement with a clear error") {
  Schedule schedule = zb_v(2, 2);
  schedule.placement = {0, 1, 3, 3};
  CHECK_THAT(first_error(schedule), Catch::Contains("the placement gives virtual stage 3 to both stage 0 chunk 1 and "
                                                    "stage 1 chunk 1"));
  CHECK_THAT(validate(schedule).errors.back(), Catch::Contains("the placement gives virtual stage 2 to no chunk"));
  schedule.placement = {0, 1, 2, 9};
  CHECK_THAT(first_error(schedule), Catch::Contains("the placement gives stage 1 chunk 1 virtual stage 9, outside 0..3"));
  schedule.placement = {0, 1, 2};
  CHECK_THAT(first_error(schedule), Catch::Contains("the placement has 3 entries, but 2 stages x 2 chunks need 4"));
  CHECK_THROWS_WITH(check_placement(schedule, "plan.txt"),
                    Catch::StartsWith("plan.txt: schedule 'zb-v': the placement has 3 entries"));
  CHECK_THROWS_WITH(simulate(schedule, slot_costs()), Catch::Contains("the placement has 3 entries"));
  CHECK_NOTHROW(check_placement(zb_v(2, 2)));
  CHECK_NOTHROW(check_placement(dapple(2, 2)));
}

TEST_CASE("a local hand-over needs its send before its receive on the same stage") {
  // Stage 1 holds virtual stages 1 and 2: RA0c1 before SA0c0 waits for itself.
  Schedule schedule = zb_v(2, 1);
  schedule.programs[1] = parse_program("RA0c0 F0c0 RA0c1 SA0c0 F0c1 SA0c1 RG0c1 BI0c1 SG0c1 BW0c1 RG0c0 BI0c0 SG0c0 BW0c0 AR STEP");
  CHECK_THAT(first_error(schedule),
             Catch::Contains("stage 1: RA0c1 (action 3) comes before SA0c0 (action 4), but virtual stages 1 and 2 are both on "
                             "stage 1: the hand-over is local, so its send must come first"));
  schedule = zb_v(2, 1);
  schedule.programs[1] = parse_program("RA0c0 F0c0 SA0c0 RA0c1 F0c1 SA0c1 RG0c1 BI0c1 RG0c0 SG0c1 BW0c1 BI0c0 SG0c0 BW0c0 AR STEP");
  CHECK_THAT(first_error(schedule), Catch::Contains("stage 1: RG0c0 (action 9) comes before SG0c1 (action 10)"));
  CHECK_THROWS_WITH(simulate(schedule, slot_costs()), Catch::Contains("the hand-over is local"));
  // Across stages the order within a program is free: stage 0's SA0c0 and RA0c1 are not local.
  CHECK(validate(zb_v(2, 1)).ok());
  // A send past the end of the V (chunk 1 of stage 0 is the last virtual stage) is refused, not simulated.
  schedule = zb_v(2, 1);
  schedule.programs[0] = parse_program("F0c0 SA0c0 RA0c1 F0c1 SA0c1 BI0c1 SG0c1 BW0c1 RG0c0 BI0c0 BW0c0 AR STEP");
  CHECK_THROWS_WITH(simulate(schedule, slot_costs()), Catch::Contains("SA0c1 is not allowed: the last virtual stage"));
}

TEST_CASE("simulator: a local hand-over costs no time and no link; the way back up uses the link below") {
  // S = 2, M = 1, F = 1, B = 2 (BI = BW = 0.5 per chunk, F = 0.5), link 0 with 1 ms latency, link 1 with
  // 100 ms: the V never uses link 1 (it is the looped wrap), and the turn on stage 1 is free.
  CostModel costs = uniform_costs(1, 2);
  costs.links = {Link{std::numeric_limits<double>::infinity(), 1.0}, Link{std::numeric_limits<double>::infinity(), 100.0}};
  const SimulationResult result = simulate(zb_v(2, 1), costs);
  int local = 0, remote = 0;
  for (const Transfer& t : result.transfers) {
    if (t.from_stage == t.to_stage) {
      ++local;
      CHECK(t.arrival_ms == Approx(t.start_ms));
    } else {
      ++remote;
      CHECK(t.arrival_ms == Approx(t.start_ms + 1.0));
    }
  }
  CHECK(local == 2);   // SA0c0 -> RA0c1 and SG0c1 -> RG0c0 on stage 1
  CHECK(remote == 4);  // down and back up, activation and gradient
  // Path: F on stage 0 (0.5), link (1), F F on stage 1 (1), link (1), F BI on stage 0 (1), link (1),
  // BI BI on stage 1 (1; its BW0c1 runs in between: + 0.5), link (1), BI BW on stage 0 (1).
  CHECK(result.step_ms == Approx(0.5 + 1 + 1 + 1 + 1 + 1 + 1.5 + 1 + 1));
}

TEST_CASE("zb-v with unit chunk costs: step max(6M + S - 1, 4M + 4S - 2), peak min(2S, M + 1 + s, 2M)") {
  for (int stages = 1; stages <= 8; ++stages)
    for (int microbatches = 1; microbatches <= 32; ++microbatches) {
      const SimulationResult result = simulate(zb_v(stages, microbatches), slot_costs());
      INFO("S=" << stages << " M=" << microbatches);
      const double step = zb_v_step(stages, microbatches);
      CHECK(result.step_ms == Approx(step));
      CHECK(result.bubble_fraction == Approx(1 - 6.0 * microbatches / step).margin(1e-12));
      for (int s = 0; s < stages; ++s) {
        CHECK(result.stages[s].peak_inflight == zb_v_peak(stages, microbatches, s));
        CHECK(result.stages[s].peak_activation_units == Approx(zb_v_peak(stages, microbatches, s) / 2.0));
      }
    }
  // Enough micro-batches: every stage holds 2S half-size chunk activations, 1F1B's S on stage 0,
  // and idles S - 1 chunk slots: bubble (S - 1)/(6M + S - 1), a sixth of 1F1B's idle time.
  const SimulationResult zb = simulate(zb_v(4, 8), slot_costs());
  const SimulationResult one_f_one_b = simulate(dapple(4, 8), slot_costs());
  CHECK(zb.bubble_fraction == Approx(3.0 / 51));
  CHECK(zb.stages[0].peak_activation_units == one_f_one_b.stages[0].peak_activation_units);
  CHECK(zb.stages[0].idle_ms * 6 == Approx(one_f_one_b.stages[0].idle_ms));
}

TEST_CASE("v-half and v-min with unit chunk costs: step and peaks against the closed forms") {
  for (int stages = 1; stages <= 8; ++stages)
    for (int microbatches = 1; microbatches <= 32; ++microbatches) {
      INFO("S=" << stages << " M=" << microbatches);
      const SimulationResult half = simulate(v_half(stages, microbatches), slot_costs());
      const SimulationResult min = simulate(v_min(stages, microbatches), slot_costs());
      CHECK(half.step_ms == Approx(v_half_step(stages, microbatches)));
      CHECK(min.step_ms == Approx(v_min_step(stages, microbatches)));
      CHECK(half.bubble_fraction == Approx(1 - 6.0 * microbatches / v_half_step(stages, microbatches)).margin(1e-12));
      CHECK(min.bubble_fraction == Approx(1 - 6.0 * microbatches / v_min_step(stages, microbatches)).margin(1e-12));
      for (int s = 0; s < stages; ++s) {
        INFO("stage " << s);
        // The block's peak once the pipeline is full (M > S), never more before.
        if (microbatches > stages) {
          CHECK(half.stages[s].peak_inflight == v_half_peak(stages));
          CHECK(min.stages[s].peak_inflight == v_min_peak(stages, s));
        } else {
          CHECK(half.stages[s].peak_inflight <= v_half_peak(stages));
          CHECK(min.stages[s].peak_inflight <= v_min_peak(stages, s));
        }
      }
    }
  // S = 8, M = 32: 1F1B holds 8 micro-batches on stage 0, V-Half 5 (10 chunks), V-Min 3 (6 chunks).
  const SimulationResult one_f_one_b = simulate(dapple(8, 32), slot_costs());
  CHECK(one_f_one_b.stages[0].peak_activation_units == 8);
  CHECK(simulate(v_half(8, 32), slot_costs()).stages[0].peak_activation_units == 5);
  CHECK(simulate(v_min(8, 32), slot_costs()).stages[0].peak_activation_units == 3);
}

TEST_CASE("the simulated trace of a V schedule names chunks and their virtual stages") {
  const Schedule schedule = zb_v(2, 2);
  const Trace trace = simulation_trace(schedule, simulate(schedule, uniform_costs(1, 2)));
  bool found = false;
  for (const TraceEvent& e : trace.events)
    if (e.track == 0 && e.name == "F1c1") {
      found = true;
      CHECK(e.chunk == 1);
      CHECK(e.virtual_stage == 3);
      CHECK(chrome_event(e).at("args").at("virtual_stage") == 3);
    }
  CHECK(found);
  const std::string svg = svg_timeline(trace, "zb-v");
  CHECK_THAT(svg, Catch::Contains("F1c1 (virtual stage 3)"));
  CHECK_THAT(svg, Catch::Contains("lighter: later chunks"));
}
