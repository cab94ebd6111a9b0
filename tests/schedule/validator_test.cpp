// Broken schedules are rejected with a message that says why; valid ones report their memory.
#include <catch2/catch.hpp>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

using namespace loom::schedule;

namespace {

// The first error of a hand-written schedule ("" if valid).
std::string first_error(const std::string& text) {
  const ValidationReport report = validate(parse_schedule(text, "test"));
  return report.ok() ? "" : report.errors.front();
}

// S = 2, M = 2 DAPPLE, written out in full; the cases below break one thing each.
const std::string kGood =
    "stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
    "stage 1: RA0 F0 B0 SG0 RA1 F1 B1 SG1 AR STEP\n";

}  // namespace

TEST_CASE("the reference schedule is valid") {
  CHECK(first_error(kGood) == "");
  const ValidationReport report = validate(parse_schedule(kGood));
  CHECK(report.stages[0].peak_inflight == 2);
  CHECK(report.stages[1].peak_inflight == 1);
}

TEST_CASE("every F and B exactly once per micro-batch and stage") {
  CHECK_THAT(first_error("stage 0: F0 SA0 SA1 RG0 B0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 RA1 F1 B1 SG1 AR STEP\n"),
             Catch::Contains("stage 0: F1 is missing"));
  CHECK_THAT(first_error("stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 RA1 F1 B1 SG1 AR STEP\n"),
             Catch::Contains("stage 0: B1 appears 2 times (actions 8 and 9)"));
  CHECK_THAT(first_error("stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 RA1 F1 SG1 AR STEP\n"),
             Catch::Contains("stage 1: B1 is missing"));
  CHECK_THAT(first_error("stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 RA1 B1 F1 SG1 AR STEP\n"),
             Catch::Contains("stage 1: B1 (action 6) comes before F1 (action 7)"));
}

TEST_CASE("split backward: BI then BW, never mixed with B") {
  CHECK_THAT(first_error("stage 0: F0 BI0 AR STEP\n"), Catch::Contains("BW0 is missing"));
  CHECK_THAT(first_error("stage 0: F0 BW0 BI0 AR STEP\n"), Catch::Contains("BW0 (action 2) comes before BI0 (action 3)"));
  CHECK_THAT(first_error("stage 0: F0 B0 BI0 BW0 AR STEP\n"), Catch::Contains("has both B and BI/BW"));
  CHECK(first_error("stage 0: F0 F1 BI0 BI1 BW1 BW0 AR STEP\n") == "");
}

TEST_CASE("sends and receives match across stages") {
  CHECK_THAT(first_error("stage 0: F0 SA0 F1 RG0 B0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 RA1 F1 B1 SG1 AR STEP\n"),
             Catch::Contains("stage 0: SA1 is missing (the next stage waits for this activation)"));
  CHECK_THAT(first_error("stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 F1 B1 SG1 AR STEP\n"),
             Catch::Contains("stage 1: RA1 is missing (the forward needs its input from the previous stage)"));
  CHECK_THAT(first_error("stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 F1 RA1 B1 SG1 AR STEP\n"),
             Catch::Contains("stage 1: F1 (action 5) comes before RA1 (action 6)"));
  CHECK_THAT(first_error("stage 0: RA0 F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 RA1 F1 B1 SG1 AR STEP\n"),
             Catch::Contains("RA0 is not allowed: the first virtual stage reads its input from the data"));
  CHECK_THAT(first_error("stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 SA0 B0 SG0 RA1 F1 B1 SG1 AR STEP\n"),
             Catch::Contains("SA0 is not allowed: the last virtual stage"));
  CHECK_THAT(first_error("stage 0: F0 SA0 B0 F1 SA1 RG0 RG1 B1 AR STEP\n"
                         "stage 1: RA0 F0 B0 SG0 RA1 F1 B1 SG1 AR STEP\n"),
             Catch::Contains("stage 0: B0 (action 3) comes before RG0 (action 6)"));
}

TEST_CASE("deadlocks are found and explained") {
  // Stage 0 waits for the gradient of micro-batch 0 before sending micro-batch 1's activation,
  // while stage 1 wants both forwards before its first backward.
  const std::string message = first_error(
      "stage 0: F0 SA0 RG0 B0 F1 SA1 RG1 B1 AR STEP\n"
      "stage 1: RA0 F0 RA1 F1 B0 SG0 B1 SG1 AR STEP\n");
  CHECK_THAT(message, Catch::Contains("deadlock under the executor's semantics"));
  CHECK_THAT(message, Catch::Contains("stage 0 waits at RG0 (action 3) for stage 1's SG0 (action 6), which comes after "
                                      "stage 1's own wait at action 3"));
  CHECK_THAT(message, Catch::Contains("stage 1 waits at RA1 (action 3) for stage 0's SA1 (action 6)"));
  // Warm-up depths that grow along the pipeline deadlock the same way.
  Schedule growing = dapple(2, 4);
  growing.programs[1] = parse_program("RA0 F0 RA1 F1 B0 SG0 RA2 F2 B1 SG1 RA3 F3 B2 SG2 B3 SG3 AR STEP");
  growing.programs[0] = parse_program("F0 SA0 RG0 B0 F1 SA1 RG1 B1 F2 SA2 RG2 B2 F3 SA3 RG3 B3 AR STEP");
  CHECK_THAT(validate(growing).errors.front(), Catch::Contains("deadlock"));
  CHECK_THROWS_WITH(check(growing), Catch::Contains("invalid schedule 'dapple': deadlock"));
}

TEST_CASE("synchronous schedules end with AR then STEP after all compute") {
  CHECK_THAT(first_error("stage 0: F0 B0 STEP\n"), Catch::Contains("exactly one AR and one STEP"));
  CHECK_THAT(first_error("stage 0: F0 AR B0 STEP\n"), Catch::Contains("AR (action 2) comes before the last compute"));
  CHECK_THAT(first_error("stage 0: F0 B0 STEP AR\n"), Catch::Contains("STEP (action 3) comes before AR (action 4)"));
}

TEST_CASE("asynchronous schedules: versions exist and backwards reuse their forward's version") {
  CHECK(first_error("stage 0: F0@0 B0@0 AR STEP F1@1 B1@1 AR STEP\n") == "");
  CHECK_THAT(first_error("stage 0: F0@0 B0@0 AR STEP F1@2 B1@2 AR STEP\n"),
             Catch::Contains("F1@2 uses weight version 2 but the stage has done only 1 STEPs"));
  CHECK_THAT(first_error("stage 0: F0@0 F1@0 B0@0 AR STEP B1@1 AR STEP\n"),
             Catch::Contains("B1@1 uses weight version 1 but its forward used version 0"));
  CHECK_THAT(first_error("stage 0: F0@0 B0 AR STEP\n"), Catch::Contains("B0 has no weight version"));
}

TEST_CASE("out-of-range micro-batches and chunks") {
  Schedule schedule = dapple(2, 2);
  schedule.programs[0][0].microbatch = 5;
  CHECK_THAT(validate(schedule).errors.front(), Catch::Contains("micro-batch out of range 0..1"));
  schedule = dapple(2, 2);
  schedule.programs[1][1].chunk = 1;
  CHECK_THAT(validate(schedule).errors.front(), Catch::Contains("chunk out of range 0..0"));
  schedule = dapple(2, 2);
  schedule.programs.pop_back();
  CHECK_THAT(validate(schedule).errors.front(), Catch::Contains("1 programs for 2 stages"));
}

TEST_CASE("memory profile of one program") {
  CHECK(stage_memory(parse_program("F0 F1 F2 B0 F3 B1 B2 B3")).peak_inflight == 3);
  CHECK(stage_memory(parse_program("F0 F1 BI0 BI1 BW0 F2 BW1 BI2 BW2")).peak_inflight == 2);
  const StageMemory stashing = stage_memory(parse_program("F0@0 F1@0 B0@0 STEP F2@1 B1@0 STEP F3@2 B2@1 STEP B3@2 STEP"));
  CHECK(stashing.peak_inflight == 2);
  CHECK(stashing.peak_weight_versions == 2);
}
