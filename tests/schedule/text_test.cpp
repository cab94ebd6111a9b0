// The text form: tokens, whole schedules, round trips and parse errors that point at the token.
#include <catch2/catch.hpp>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

using namespace loom::schedule;

TEST_CASE("action tokens") {
  CHECK(parse_action("F3") == Action{Op::Forward, 3, 0, -1});
  CHECK(parse_action("BI12") == Action{Op::BackwardInput, 12, 0, -1});
  CHECK(parse_action("BW0c2") == Action{Op::BackwardWeight, 0, 2, -1});
  CHECK(parse_action("B7@4") == Action{Op::Backward, 7, 0, 4});
  CHECK(parse_action("RA5c1@0") == Action{Op::RecvActivation, 5, 1, 0});
  CHECK(parse_action("SG2") == Action{Op::SendGradient, 2, 0, -1});
  CHECK(parse_action("AR") == allreduce());
  CHECK(parse_action("STEP") == optimizer_step());

  CHECK(to_string(Action{Op::Forward, 3, 1, 2}, true) == "F3c1@2");
  CHECK(to_string(Action{Op::Forward, 3, 1, -1}, false) == "F3");
  CHECK(to_string(allreduce(), true) == "AR");
}

TEST_CASE("bad tokens say what is wrong") {
  CHECK_THROWS_WITH(parse_action("X3"), Catch::Contains("'X3'") && Catch::Contains("unknown action"));
  CHECK_THROWS_WITH(parse_action("F"), Catch::Contains("F must be followed by a micro-batch number"));
  CHECK_THROWS_WITH(parse_action("F3c"), Catch::Contains("'c' must be followed by a chunk number"));
  CHECK_THROWS_WITH(parse_action("F3@"), Catch::Contains("'@' must be followed by a weight version"));
  CHECK_THROWS_WITH(parse_action("F3x"), Catch::Contains("unexpected 'x'"));
  CHECK_THROWS_WITH(parse_action("STEP1"), Catch::Contains("STEP takes no micro-batch"));
  CHECK_THROWS_WITH(parse_action("f3"), Catch::Contains("unknown action"));
}

TEST_CASE("a program line: errors give the token's index and column") {
  CHECK(parse_program("F0 F1  B0\tB1 # comment") ==
        std::vector<Action>{forward(0), forward(1), backward(0), backward(1)});
  CHECK_THROWS_WITH(parse_program("F0 F1 B0 Q1"), Catch::Contains("'Q1' (token 4, column 10)"));
}

TEST_CASE("whole schedules round-trip through text") {
  for (const Schedule& schedule : {dapple(4, 8), pipedream(3, 5), interleaved(2, 4, 2), zb_h1(4, 8),
                                   pipedream_2bw(2, 2, 3), gpipe(1, 1)}) {
    const Schedule parsed = parse_schedule(to_text(schedule), "round-trip");
    CHECK(parsed == schedule);
  }
}

TEST_CASE("parsing a hand-written schedule infers S, M and v") {
  const Schedule schedule = parse_schedule(
      "# two stages, two micro-batches\n"
      "schedule mine\n"
      "stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 AR STEP\n"
      "\n"
      "stage 1: RA0 F0 B0 SG0 RA1 F1 B1 SG1 AR STEP   # the last stage\n");
  CHECK(schedule.name == "mine");
  CHECK(schedule.stages == 2);
  CHECK(schedule.microbatches == 2);
  CHECK(schedule.chunks == 1);
  CHECK(schedule.programs[1][2] == backward(0));
}

TEST_CASE("schedule parse errors name the source, line, column and token") {
  CHECK_THROWS_WITH(parse_schedule("stage 0: F0 B0\nstage 1: F0 B0x\n", "my.txt"),
                    Catch::Contains("my.txt:2:13: bad action 'B0x' (token 2 of stage 1)"));
  CHECK_THROWS_WITH(parse_schedule("stage 0: F0\nstage 2: F0\n", "my.txt"),
                    Catch::Contains("my.txt:2:1: expected 'stage 1: <actions>'"));
  CHECK_THROWS_WITH(parse_schedule("F0 B0\n", "my.txt"), Catch::Contains("expected 'stage 0: <actions>'"));
  CHECK_THROWS_WITH(parse_schedule("# nothing\n", "my.txt"), Catch::Contains("my.txt: no 'stage N: ...' lines"));
  CHECK_THROWS_WITH(parse_schedule("stage 0: F0\nschedule late\n", "my.txt"),
                    Catch::Contains("my.txt:2:1: 'schedule NAME' must come once"));
  CHECK_THROWS_AS(parse_schedule("stage 0: AR STEP\n"), loom::Error);
}

// Issue 15, defect 7: "stage 0: F99999999 B99999999 AR STEP" (37 bytes) used to parse into a
// schedule of 10^8 micro-batches whose validation allocated 6 GB; sizes are checked while parsing.
TEST_CASE("schedule sizes are bounded while parsing, with errors that name the file") {
  CHECK_THROWS_WITH(parse_schedule("stage 0: F99999999 B99999999 AR STEP\n", "s37.txt"),
                    Catch::StartsWith("s37.txt:1:10: bad action 'F99999999'") &&
                        Catch::Contains("micro-batch 99999999 is beyond the largest a schedule may have (65535)"));
  CHECK_THROWS_WITH(parse_schedule("stage 0: F0c64 B0c64 AR STEP\n", "c.txt"), Catch::Contains("chunk 64 is beyond"));
  std::string many;
  for (int s = 0; s <= kMaxStages; ++s) many += "stage " + std::to_string(s) + ": F0 B0 AR STEP\n";
  CHECK_THROWS_WITH(parse_schedule(many, "many.txt"), Catch::StartsWith("many.txt:1025:1: more than 1024 stage lines"));
  CHECK_THROWS_WITH(parse_schedule("stage 0: F0 F65535 AR STEP\nstage 1: F0\nstage 2: F0\nstage 3: F0\nstage 4: F0\n"
                                   "stage 5: F0\nstage 6: F0\nstage 7: F0\nstage 8: F0\n",
                                   "cells.txt"),
                    Catch::StartsWith("cells.txt: S x M x v = 9 x 65536 x 1 = 589824 is more than the 524288"));
  CHECK_NOTHROW(check_size(kMaxStages, kMaxScheduleCells / kMaxStages, 1, "--stages"));
  CHECK_THROWS_WITH(check_size(100000, 8, 1, "--stages"), Catch::StartsWith("--stages: S = 100000 stages is outside [1, 1024]"));
}

// Defect 18: validation errors name the file; echoed user text is cut to 80 characters.
TEST_CASE("validation errors name the file, and echoed input is cut short") {
  const Schedule missing = parse_schedule("stage 0: F0 AR STEP\n", "missing.txt");
  CHECK_THROWS_WITH(check(missing, "missing.txt"),
                    Catch::StartsWith("missing.txt: invalid schedule 'custom': stage 0: B0 is missing"));
  const std::string long_token = "F0" + std::string(10'000'000, 'x');
  try {
    parse_schedule("stage 0: " + long_token + "\n", "long.txt");
    FAIL("a 10 MB token must not parse");
  } catch (const loom::Error& e) {
    CHECK(std::string(e.what()).size() < 400);
    CHECK_THAT(e.what(), Catch::Contains("xxx...'"));
  }
  CHECK(excerpt(std::string(100, 'a')) == std::string(80, 'a') + "...");
  CHECK(excerpt("short") == "short");
}
