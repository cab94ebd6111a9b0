// The text form: tokens, whole schedules, round trips and parse errors that point at the token.
#include <catch2/catch.hpp>

#include <loom/core/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/text.h>

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
