// Every generator against its S = 4, M = 8 program worked out by hand from the schedule's rule
// (docs/schedules.md), plus the full form with transfers on small cases and the generators' limits.
#include <catch2/catch.hpp>

#include <sstream>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

#include "require_programs.h"

using namespace loom::schedule;
using loom::schedule::test::require_programs;

TEST_CASE("gpipe S=4 M=8: all forwards, then all backwards") {
  const std::string program =
      "F0 F1 F2 F3 F4 F5 F6 F7 "
      "B0 B1 B2 B3 B4 B5 B6 B7 AR STEP";
  require_programs(gpipe(4, 8), {program, program, program, program});
}

TEST_CASE("dapple S=4 M=8: K_s = S - s warm-up forwards, 1B1F, drain") {
  require_programs(dapple(4, 8), {
      "F0 F1 F2 F3 "  "B0 F4 B1 F5 B2 F6 B3 F7 "  "B4 B5 B6 B7 AR STEP",
      "F0 F1 F2 "     "B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 "  "B5 B6 B7 AR STEP",
      "F0 F1 "        "B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 "  "B6 B7 AR STEP",
      "F0 "           "B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 "  "B7 AR STEP",
  });
}

TEST_CASE("dapple with a larger warm-up K (slow links)") {
  // K = 6 for the first stage: K_s = 6, 5, 4, 3.
  require_programs(dapple(4, 8, {6}), {
      "F0 F1 F2 F3 F4 F5 "  "B0 F6 B1 F7 "  "B2 B3 B4 B5 B6 B7 AR STEP",
      "F0 F1 F2 F3 F4 "     "B0 F5 B1 F6 B2 F7 "  "B3 B4 B5 B6 B7 AR STEP",
      "F0 F1 F2 F3 "        "B0 F4 B1 F5 B2 F6 B3 F7 "  "B4 B5 B6 B7 AR STEP",
      "F0 F1 F2 "           "B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 "  "B5 B6 B7 AR STEP",
  });
  CHECK(warmup_depths(4, 8, {}) == std::vector<int>{4, 3, 2, 1});
  CHECK(warmup_depths(4, 2, {}) == std::vector<int>{2, 2, 2, 1});
  CHECK(warmup_depths(4, 8, {2}) == std::vector<int>{2, 1, 1, 1});
  CHECK(warmup_depths(4, 8, {5, 5, 2, 2}) == std::vector<int>{5, 5, 2, 2});
  CHECK_THROWS_WITH(warmup_depths(4, 8, {2, 3, 1, 1}), Catch::Contains("must not increase"));
  CHECK_THROWS_WITH(warmup_depths(4, 8, {9, 3, 2, 1}), Catch::Contains("between 1 and the number of micro-batches"));
  CHECK_THROWS_WITH(warmup_depths(4, 8, {3, 2}), Catch::Contains("expected 1 or 4 values"));
}

TEST_CASE("dapple full form: receive right before the compute, send right after") {
  // S = 2, M = 3: stage 0 runs F0 F1 B0 F2 B1 B2, stage 1 runs F0 B0 F1 B1 F2 B2.
  require_programs(dapple(2, 3), {
      "F0 SA0 F1 SA1 RG0 B0 F2 SA2 RG1 B1 RG2 B2 AR STEP",
      "RA0 F0 B0 SG0 RA1 F1 B1 SG1 RA2 F2 B2 SG2 AR STEP",
  }, TextStyle::Full);
}

TEST_CASE("pipedream S=4, 8 minibatches: 1F1B without flush, STEP after every backward") {
  // Stage s has K = 4 - s minibatches in flight; forward n >= K runs after n - K + 1 updates, so it
  // uses version n - K + 1; every backward reuses its forward's version.
  require_programs(pipedream(4, 8), {
      "F0@0 F1@0 F2@0 F3@0 B0@0 AR STEP F4@1 B1@0 AR STEP F5@2 B2@0 AR STEP F6@3 B3@0 AR STEP "
      "F7@4 B4@1 AR STEP B5@2 AR STEP B6@3 AR STEP B7@4 AR STEP",
      "F0@0 F1@0 F2@0 B0@0 AR STEP F3@1 B1@0 AR STEP F4@2 B2@0 AR STEP F5@3 B3@1 AR STEP "
      "F6@4 B4@2 AR STEP F7@5 B5@3 AR STEP B6@4 AR STEP B7@5 AR STEP",
      "F0@0 F1@0 B0@0 AR STEP F2@1 B1@0 AR STEP F3@2 B2@1 AR STEP F4@3 B3@2 AR STEP "
      "F5@4 B4@3 AR STEP F6@5 B5@4 AR STEP F7@6 B6@5 AR STEP B7@6 AR STEP",
      "F0@0 B0@0 AR STEP F1@1 B1@1 AR STEP F2@2 B2@2 AR STEP F3@3 B3@3 AR STEP "
      "F4@4 B4@4 AR STEP F5@5 B5@5 AR STEP F6@6 B6@6 AR STEP F7@7 B7@7 AR STEP",
  });
  // Versions kept = minibatches in flight.
  const ValidationReport report = validate(pipedream(4, 8));
  for (int s = 0; s < 4; ++s) {
    CHECK(report.stages[s].peak_inflight == 4 - s);
    CHECK(report.stages[s].peak_weight_versions == 4 - s);
  }
}

TEST_CASE("pipedream-2bw S=4, M=4, 3 minibatches: one update per minibatch, two versions") {
  // Micro-batches 4n..4n+3 form minibatch n and use version max(n - 1, 0); the STEP follows the
  // backward of micro-batch 4n+3 on each stage.
  require_programs(pipedream_2bw(4, 4, 3), {
      "F0@0 F1@0 F2@0 F3@0 B0@0 F4@0 B1@0 F5@0 B2@0 F6@0 B3@0 AR STEP F7@0 B4@0 F8@1 B5@0 F9@1 B6@0 F10@1 "
      "B7@0 AR STEP F11@1 B8@1 B9@1 B10@1 B11@1 AR STEP",
      "F0@0 F1@0 F2@0 B0@0 F3@0 B1@0 F4@0 B2@0 F5@0 B3@0 AR STEP F6@0 B4@0 F7@0 B5@0 F8@1 B6@0 F9@1 "
      "B7@0 AR STEP F10@1 B8@1 F11@1 B9@1 B10@1 B11@1 AR STEP",
      "F0@0 F1@0 B0@0 F2@0 B1@0 F3@0 B2@0 F4@0 B3@0 AR STEP F5@0 B4@0 F6@0 B5@0 F7@0 B6@0 F8@1 "
      "B7@0 AR STEP F9@1 B8@1 F10@1 B9@1 F11@1 B10@1 B11@1 AR STEP",
      "F0@0 B0@0 F1@0 B1@0 F2@0 B2@0 F3@0 B3@0 AR STEP F4@0 B4@0 F5@0 B5@0 F6@0 B6@0 F7@0 "
      "B7@0 AR STEP F8@1 B8@1 F9@1 B9@1 F10@1 B10@1 F11@1 B11@1 AR STEP",
  });
  const ValidationReport report = validate(pipedream_2bw(4, 8, 3));
  for (const StageMemory& memory : report.stages) CHECK(memory.peak_weight_versions == 2);
  CHECK_THROWS_WITH(pipedream_2bw(4, 3, 2), Catch::Contains("at least as many micro-batches per minibatch as stages"));
}

TEST_CASE("pipedream-2bw S=4 M=8, 2 minibatches: STEP after micro-batches 7 and 15, all on version 0") {
  // Minibatches 0 and 1 both run on version max(n - 1, 0) = 0; the 1F1B order is dapple's over 16.
  auto on_version_0 = [](const std::string& program) {
    std::string out, token;
    std::istringstream in(program);
    while (in >> token) {
      if (token != "AR" && token != "STEP") token += "@0";
      out += (out.empty() ? "" : " ") + token;
    }
    return out;
  };
  require_programs(pipedream_2bw(4, 8, 2), {
      on_version_0("F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 F8 B5 F9 B6 F10 B7 AR STEP "
                   "F11 B8 F12 B9 F13 B10 F14 B11 F15 B12 B13 B14 B15 AR STEP"),
      on_version_0("F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 F8 B6 F9 B7 AR STEP "
                   "F10 B8 F11 B9 F12 B10 F13 B11 F14 B12 F15 B13 B14 B15 AR STEP"),
      on_version_0("F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 F8 B7 AR STEP "
                   "F9 B8 F10 B9 F11 B10 F12 B11 F13 B12 F14 B13 F15 B14 B15 AR STEP"),
      on_version_0("F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 AR STEP "
                   "F8 B8 F9 B9 F10 B10 F11 B11 F12 B12 F13 B13 F14 B14 F15 B15 AR STEP"),
  });
}

TEST_CASE("interleaved S=4 M=8 v=2: Megatron's order") {
  // Forward steps visit (micro-batches 0-3, chunk 0), (0-3, chunk 1), (4-7, chunk 0), (4-7, chunk 1);
  // backward steps the same with the chunks reversed. Stage s starts with 2(S - s - 1) + (v - 1)S + 1
  // forwards (11, 9, 7, 5), then alternates backward and forward steps.
  require_programs(interleaved(4, 8, 2), {
      "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 F3c1 F4c0 F5c0 F6c0 "
      "B0c1 F7c0 B1c1 F4c1 B2c1 F5c1 B3c1 F6c1 B0c0 F7c1 "
      "B1c0 B2c0 B3c0 B4c1 B5c1 B6c1 B7c1 B4c0 B5c0 B6c0 B7c0 AR STEP",
      "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 F3c1 F4c0 "
      "B0c1 F5c0 B1c1 F6c0 B2c1 F7c0 B3c1 F4c1 B0c0 F5c1 B1c0 F6c1 B2c0 F7c1 "
      "B3c0 B4c1 B5c1 B6c1 B7c1 B4c0 B5c0 B6c0 B7c0 AR STEP",
      "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 "
      "B0c1 F3c1 B1c1 F4c0 B2c1 F5c0 B3c1 F6c0 B0c0 F7c0 B1c0 F4c1 B2c0 F5c1 B3c0 F6c1 B4c1 F7c1 "
      "B5c1 B6c1 B7c1 B4c0 B5c0 B6c0 B7c0 AR STEP",
      "F0c0 F1c0 F2c0 F3c0 F0c1 "
      "B0c1 F1c1 B1c1 F2c1 B2c1 F3c1 B3c1 F4c0 B0c0 F5c0 B1c0 F6c0 B2c0 F7c0 B3c0 F4c1 B4c1 F5c1 B5c1 "
      "F6c1 B6c1 F7c1 B7c1 B4c0 B5c0 B6c0 B7c0 AR STEP",
  });
}

TEST_CASE("interleaved full form: chunk 1 of stage 0 receives from the last stage's chunk 0") {
  // S = 2, v = 2: virtual stages 0 (stage 0 c0), 1 (stage 1 c0), 2 (stage 0 c1), 3 (stage 1 c1).
  require_programs(interleaved(2, 2, 2), {
      "F0c0 SA0c0 F1c0 SA1c0 RA0c1 F0c1 SA0c1 RA1c1 F1c1 SA1c1 "
      "RG0c1 B0c1 SG0c1 RG1c1 B1c1 SG1c1 RG0c0 B0c0 RG1c0 B1c0 AR STEP",
      "RA0c0 F0c0 SA0c0 RA1c0 F1c0 SA1c0 RA0c1 F0c1 B0c1 SG0c1 "
      "RA1c1 F1c1 B1c1 SG1c1 RG0c0 B0c0 SG0c0 RG1c0 B1c0 SG1c0 AR STEP",
  }, TextStyle::Full);
  CHECK_THROWS_WITH(interleaved(4, 6, 2),
                    Catch::Contains("number of micro-batches (6) to be a multiple of the number of stages (4)"));
}

TEST_CASE("zb-h1 S=4 M=8: BI on the critical path, stage s lags its BW by s") {
  require_programs(zb_h1(4, 8), {
      "F0 F1 F2 F3 BI0 BW0 F4 BI1 BW1 F5 BI2 BW2 F6 BI3 BW3 F7 BI4 BW4 BI5 BW5 BI6 BW6 BI7 BW7 AR STEP",
      "F0 F1 F2 BI0 F3 BI1 BW0 F4 BI2 BW1 F5 BI3 BW2 F6 BI4 BW3 F7 BI5 BW4 BI6 BW5 BI7 BW6 BW7 AR STEP",
      "F0 F1 BI0 F2 BI1 F3 BI2 BW0 F4 BI3 BW1 F5 BI4 BW2 F6 BI5 BW3 F7 BI6 BW4 BI7 BW5 BW6 BW7 AR STEP",
      "F0 BI0 F1 BI1 F2 BI2 F3 BI3 BW0 F4 BI4 BW1 F5 BI5 BW2 F6 BI6 BW3 F7 BI7 BW4 BW5 BW6 BW7 AR STEP",
  });
  // Peak activations: S on every stage, the 1F1B peak of stage 0.
  const ValidationReport zb = validate(zb_h1(4, 8)), one_f_one_b = validate(dapple(4, 8));
  for (int s = 0; s < 4; ++s) CHECK(zb.stages[s].peak_inflight == one_f_one_b.stages[0].peak_inflight);
}

TEST_CASE("every generator is valid over a range of sizes") {
  for (int stages : {1, 2, 3, 4, 5, 8})
    for (int microbatches : {1, 2, 3, 4, 7, 8, 16}) {
      std::vector<Schedule> schedules = {gpipe(stages, microbatches), dapple(stages, microbatches),
                                         pipedream(stages, microbatches), zb_h1(stages, microbatches)};
      if (microbatches >= stages) schedules.push_back(pipedream_2bw(stages, microbatches, 3));
      if (microbatches % stages == 0)
        for (int chunks : {1, 2, 3}) schedules.push_back(interleaved(stages, microbatches, chunks));
      for (const Schedule& schedule : schedules) {
        const ValidationReport report = validate(schedule);
        INFO(schedule.name << " S=" << stages << " M=" << microbatches << " v=" << schedule.chunks << ": "
                           << (report.ok() ? "" : report.errors.front()));
        CHECK(report.ok());
      }
    }
}

TEST_CASE("make_schedule dispatches by name and rejects unknown names") {
  ScheduleOptions options;
  options.stages = 4;
  options.microbatches = 8;
  for (const std::string& kind : schedule_kinds()) {
    options.kind = kind;
    CHECK(make_schedule(options).name == kind);
  }
  options.kind = "1f1b";
  CHECK_THROWS_WITH(make_schedule(options), Catch::Contains("unknown schedule '1f1b'") && Catch::Contains("zb-h1"));
  options.kind = "dapple";
  options.microbatches = 0;
  CHECK_THROWS_AS(make_schedule(options), loom::Error);
}
