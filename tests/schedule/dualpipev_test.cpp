// DualPipeV and overlapped pairs (issue 28): the generator's programs worked out by hand from its
// phases (dualpipev.cpp), validity over a grid of sizes, the pair's group in the full program, the
// simulator's timing of a pair (hand-computed, one half paused for the other), the text and CSV
// forms of a pair and their errors, and the step time and activation peak against the closed forms
// of docs/schedules.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/overlap.h>
#include <loom/schedule/schedule_file.h>
#include <loom/schedule/simulator.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

#include "require_programs.h"

using namespace loom::schedule;
using loom::schedule::test::first_error;
using loom::schedule::test::require_programs;

namespace {

const TimedAction& timed(const SimulationResult& result, int stage, const std::string& token, int nth = 0) {
  for (const TimedAction& t : result.timeline)
    if (t.stage == stage && to_string(t.action) == token && nth-- == 0) return t;
  FAIL("no " << token << " on stage " << stage);
  return result.timeline.front();
}

// The pairs of `schedule` run as plain actions in program order: both receives before the forward,
// both sends after the backward (a pair that waits for both inputs and releases both outputs together).
Schedule rigid(Schedule schedule) {
  for (auto& program : schedule.programs)
    for (Action& a : program) a.overlap = Overlap::none;
  return schedule;
}

StageCost forward_backward(double forward_ms, double backward_ms) {
  StageCost cost;
  cost.forward_ms = forward_ms;
  cost.backward_ms = backward_ms;
  return cost;
}

}  // namespace

TEST_CASE("dualpipev S=2 M=4: the phases of dualpipev.cpp worked by hand") {
  // Stage 0 (r = 0): 2 F chunk 0; F0 F1 once; BI1 BW F1 once; one round of the main phase (pairs
  // F0;B1 and F1;B0); B1 and the pair F1;B0 once; B1 then BI0 (the split starts after the first
  // chunk-1 backward of an even stage); BW, BI0; the last BW.
  // Stage 1 (r = S - 1): F0 F1 twice; the main phase twice, its first F0, B1 not overlapped; the
  // cool-down B1 B0, then BI1 BI0 (odd stage: split one action earlier), the two BWs.
  require_programs(dualpipev(2, 4), {
      "F0c0 F1c0 "  "F2c0 F0c1 "  "BI0c1 BW0c1 F1c1 "  "(F3c0;B1c1) (F2c1;B0c0) "  "B2c1 (F3c1;B1c0) "
      "B3c1 BI2c0 "  "BW2c0 BI3c0 "  "BW3c0 AR STEP",
      "F0c0 F0c1 F1c0 F1c1 "  "F2c0 B0c1 (F2c1;B0c0) (F3c0;B1c1) (F3c1;B1c0) "
      "B2c1 B2c0 BI3c1 BI3c0 "  "BW3c1 BW3c0 AR STEP",
  });
  const Schedule schedule = dualpipev(2, 4);
  CHECK(schedule.chunks == 2);
  CHECK(schedule.placement == v_placement(2));
}

TEST_CASE("dualpipev: a pair's receives come right before it and its sends right after it") {
  // Stage 1's (F3c0;B1c1): F3c0 is virtual stage 1, fed by stage 0; B1c1 is virtual stage 2, whose
  // output gradient comes from virtual stage 3 on stage 0. Its outputs go to the local turn.
  const Schedule schedule = dualpipev(2, 4);
  const std::string full = program_text(schedule, 1, TextStyle::Full);
  CHECK_THAT(full, Catch::Contains("RA3c0 RG1c1 (F3c0;B1c1) SA3c0 SG1c1"));
  for (const OverlapGroup& g : overlap_groups(schedule.programs[1])) {
    CHECK(g.end - g.begin >= 2);
    CHECK(schedule.programs[1][g.forward].op == Op::Forward);
    CHECK(schedule.programs[1][g.forward + 1].op == Op::Backward);
  }
  const auto groups = overlap_groups(schedule.programs[1]);
  REQUIRE(groups.size() == 3);
  const OverlapGroup& g = groups[1];  // (F3c0;B1c1)
  CHECK(g.forward - g.begin == 2);
  CHECK(g.end - g.forward == 4);
  CHECK(schedule.programs[1][*g.forward_receive] == Action{Op::RecvActivation, 3, 0, -1});
  CHECK(schedule.programs[1][*g.backward_send] == Action{Op::SendGradient, 1, 1, -1});
}

TEST_CASE("dualpipev is valid over a grid of sizes, M < 2S - 1 included, and is PyTorch's count of pairs") {
  for (int stages = 1; stages <= 8; ++stages)
    for (int microbatches = 1; microbatches <= 20; ++microbatches) {
      const Schedule schedule = dualpipev(stages, microbatches);
      INFO("S=" << stages << " M=" << microbatches << ": " << first_error(schedule));
      CHECK(validate(schedule).ok());
      CHECK(schedule.placement == v_placement(stages));
      CHECK_NOTHROW(simulate(schedule, uniform_costs(2, 4)));
      // With M >= 2S - 1 stage r runs M - 2S + r + 1 + S - r - 1 pairs F chunk 1; B chunk 0 and
      // M - 2S + r + 1 pairs F chunk 0; B chunk 1 (one fewer on the last stage).
      if (microbatches < 2 * stages - 1) continue;
      for (int r = 0; r < stages; ++r) {
        const int main = microbatches - 2 * stages + r + 1;
        const auto groups = overlap_groups(schedule.programs[static_cast<std::size_t>(r)]);
        CHECK(static_cast<int>(groups.size()) == 2 * main + (stages - r - 1) - (r == stages - 1 && main > 0 ? 1 : 0));
      }
    }
  CHECK_THROWS_WITH(dualpipev(0, 4), Catch::Contains("dualpipev needs at least one stage and one micro-batch"));
  ScheduleOptions options;
  options.kind = "dualpipev";
  options.stages = 4;
  options.microbatches = 8;
  CHECK(make_schedule(options) == dualpipev(4, 8));
  CHECK(is_v_shaped(parse_schedule_kind("dualpipev")));
}

TEST_CASE("dualpipev: peak 2S + 1 chunks on every stage for M >= 2S; step 6M + S - 1 slots, rigid pairs 6M + 2(S - 1)") {
  // docs/schedules.md has both. Slots: F = 1, B = 2, BI = BW = 1 per chunk (uniform_costs(2, 4)), a
  // pair F + B = 3 (the CPU runs its halves on the same cores). DualPipe's table gives the rigid
  // pair's bubble, (S - 1)(F&B + B - 3W) = 2(S - 1) slots with F&B = F + B; loom's pairs, whose
  // halves start when their own input is there and send as they end, have half of it.
  for (int stages = 1; stages <= 8; ++stages)
    for (int microbatches = 2 * stages; microbatches <= 24; ++microbatches) {
      const Schedule schedule = dualpipev(stages, microbatches);
      INFO("S=" << stages << " M=" << microbatches);
      const ValidationReport report = validate(schedule);
      for (int s = 0; s < stages; ++s) CHECK(report.stages[static_cast<std::size_t>(s)].peak_inflight == 2 * stages + 1);
      CHECK(simulate(schedule, uniform_costs(2, 4)).step_ms == Approx(6 * microbatches + stages - 1));
      CHECK(simulate(rigid(schedule), uniform_costs(2, 4)).step_ms == Approx(6 * microbatches + 2 * (stages - 1)));
    }
}

TEST_CASE("simulator: the backward half of a pair starts first and pauses while the forward runs") {
  // Stage 0: F = 4 per micro-batch, so F1 reaches stage 1 at 8. Stage 1 (F = 1, B = 6) runs F0 on
  // [4, 5], then the pair (F1;B0): B0's input (the loss) is there, F1's is not, so B0 runs from 5,
  // is paused at 8 for F1 [8, 9] and ends at 12, when SG0 leaves.
  const Schedule schedule = parse_schedule(
      "schedule pair\n"
      "stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
      "stage 1: RA0 F0 RA1 (F1;B0) SA1 SG0 B1 SG1 AR STEP\n", "pair.txt");
  // (the last stage sends no activation: an SA there is refused)
  CHECK_THAT(first_error(schedule), Catch::Contains("SA1"));
  const Schedule ok = parse_schedule(
      "schedule pair\n"
      "stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
      "stage 1: RA0 F0 RA1 (F1;B0) SG0 B1 SG1 AR STEP\n", "pair.txt");
  REQUIRE(first_error(ok).empty());
  CostModel costs;
  costs.stages = {forward_backward(4, 2), forward_backward(1, 6)};
  const SimulationResult result = simulate(ok, costs);
  CHECK(timed(result, 1, "B0", 0).start_ms == Approx(5));
  CHECK(timed(result, 1, "B0", 0).end_ms == Approx(8));
  CHECK(timed(result, 1, "F1").start_ms == Approx(8));
  CHECK(timed(result, 1, "F1").end_ms == Approx(9));
  CHECK(timed(result, 1, "B0", 1).start_ms == Approx(9));
  CHECK(timed(result, 1, "B0", 1).end_ms == Approx(12));
  CHECK(timed(result, 1, "SG0").start_ms == Approx(12));
  CHECK(result.stages[1].compute_ms == Approx(1 + 1 + 6 + 6));
  // Both inputs there: the forward first, then the backward.
  costs.stages = {forward_backward(1, 2), forward_backward(1, 6)};
  const SimulationResult both = simulate(ok, costs);
  CHECK(timed(both, 1, "F1").start_ms == Approx(2));
  CHECK(timed(both, 1, "B0").start_ms == Approx(3));
  CHECK(timed(both, 1, "B0").end_ms == Approx(9));
}

TEST_CASE("overlapped pairs in the text form: written (F;B), parsed back, bad pairs refused") {
  for (int stages : {1, 2, 3, 4})
    for (int microbatches : {1, 3, 8}) {
      const Schedule schedule = dualpipev(stages, microbatches);
      INFO("S=" << stages << " M=" << microbatches);
      CHECK(parse_schedule(to_text(schedule), "round-trip") == schedule);
    }
  CHECK_THROWS_WITH(parse_schedule("stage 0: F0 (B0;F1)\n", "p.txt"),
                    Catch::StartsWith("p.txt:1:13: bad action '(B0;F1)' (token 2 of stage 0): an overlapped pair runs a "
                                      "forward F and a full backward B"));
  CHECK_THROWS_WITH(parse_schedule("stage 0: (F0;B0\n", "p.txt"),
                    Catch::Contains("an overlapped pair is written (F<mb>[c<chunk>];B<mb>[c<chunk>])"));
  CHECK_THROWS_WITH(parse_schedule("stage 0: (F0;X0)\n", "p.txt"), Catch::Contains("in the overlapped pair: unknown action"));
  // A half alone, built by hand: the validator names it.
  Schedule lone = dualpipev(2, 4);
  auto& program = lone.programs[0];
  const auto half = std::find_if(program.begin(), program.end(), [](const Action& a) { return a.overlap == Overlap::backward_half; });
  REQUIRE(half != program.end());
  (half - 1)->overlap = Overlap::none;
  CHECK_THAT(first_error(lone), Catch::Contains("is half of an overlapped pair whose other half is not right before it"));
}

TEST_CASE("overlapped pairs in PyTorch's CSV: (0F7;7B3)OVERLAP_F_B read and written") {
  for (int stages : {1, 2, 4})
    for (int microbatches : {2, 8}) {
      const Schedule schedule = dualpipev(stages, microbatches);
      INFO("S=" << stages << " M=" << microbatches);
      const std::string csv = to_csv(schedule);
      if (stages == 4 && microbatches == 8) CHECK_THAT(csv, Catch::Contains(",(0F7;7B3)OVERLAP_F_B,(7F4;0B0)OVERLAP_F_B,"));
      Schedule back = parse_csv_schedule(csv, "d.csv");
      back.name = schedule.name;
      if (stages == 1) back.placement = schedule.placement;  // one stage's V is the looped order: the file has no placement
      CHECK(back == schedule);
    }
  CHECK_THROWS_WITH(parse_csv_schedule("0F0,(0F1;1B0)OVERLAP_F_B,0B1\r\n1F0,1B0,1F1,1B1\r\n", "x.csv"),
                    Catch::StartsWith("x.csv: rank 1, step 1: '1F0': stage 1 is on two ranks (rank 0 runs it at step 2)"));
  CHECK_THROWS_WITH(parse_csv_schedule("(0F1;0B0)\r\n", "x.csv"),
                    Catch::StartsWith("x.csv: rank 0, step 1: '(0F1;0B0)': an overlapped pair is written"));
  CHECK_THROWS_WITH(parse_csv_schedule("0F0,(0F1;0I0)OVERLAP_F_B\r\n", "x.csv"),
                    Catch::StartsWith("x.csv: rank 0, step 2: '(0F1;0I0)OVERLAP_F_B': an overlapped pair runs a forward F "
                                      "and then a full backward B"));
  CHECK_THROWS_WITH(parse_csv_schedule("0F0,(0F1;0Q0)OVERLAP_F_B\r\n", "x.csv"),
                    Catch::StartsWith("x.csv: rank 0, step 2: '(0F1;0Q0)OVERLAP_F_B': in the overlapped pair: unknown action type"));
  CHECK_THROWS_WITH(parse_csv_schedule("(0F0;0B1)OVERLAP_F_B,0B0,0F1\r\n", "x.csv"),
                    Catch::StartsWith("x.csv: rank 0, step 1: '(0F0;0B1)OVERLAP_F_B': backward B with no forward before it"));
  // One rank, two micro-batches, a pair in the middle: valid.
  const Schedule one = parse_csv_schedule("0F0,(0F1;0B0)OVERLAP_F_B,0B1\r\n", "one.csv");
  CHECK(one.programs[0][1].overlap == Overlap::forward_half);
  CHECK(one.programs[0][2].overlap == Overlap::backward_half);
}
