// Plan files version 2 (planner/plan_file.h): any schedule kind, several uneven layer ranges per
// stage, per-stage recomputation and predicted peaks, ZeRO; version 1 still reads; every bad field
// is one loom::Error naming the file and the field.
#include <catch2/catch.hpp>

#include <loom/base/error.h>
#include <loom/planner/cluster.h>
#include <loom/planner/plan_file.h>

using namespace loom::planner;

namespace {

// zb-v over 2 stages (the V: stage 0 holds virtual stages 0 and 3, stage 1 holds 1 and 2) of an
// 8-layer model, cut unevenly; stage 0 recomputes blocks 0 and 7, stage 1 nothing.
const char* kZbv = R"({"format": "loom-plan", "version": 2, "model": "mlp", "planner": "joint",
  "global_batch": 16, "microbatches": 4, "schedule": "zb-v", "chunks": 2, "zero": 1,
  "stages": [{"layers": [[0, 2], [7, 7]], "ranks": [0], "recompute": [0, 7], "predicted_peak_bytes": 1234.5},
             {"layers": [[3, 4], [5, 6]], "ranks": [1, 2], "recompute": []}],
  "predicted_step_ms": 10})";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("plan file v2: uneven chunks, recomputation, predicted peaks and zero read and write back") {
  const Plan plan = parse_plan(kZbv, "plan.json");
  CHECK(plan.schedule == ScheduleKind::zb_v);
  CHECK(plan.chunks == 2);
  CHECK(plan.zero == 1);
  REQUIRE(plan.stages.size() == 2);
  CHECK(plan.stages[0].chunk_layers() == std::vector<LayerRange>{{0, 2}, {7, 7}});
  CHECK(plan.stages[1].chunk_layers() == std::vector<LayerRange>{{3, 4}, {5, 6}});
  CHECK(plan.stages[0].recompute == std::vector<int>{0, 7});
  CHECK(plan.stages[1].recompute.empty());
  CHECK(plan.stages[0].predicted_peak_bytes == 1234.5);
  CHECK(plan.stages[1].predicted_peak_bytes < 0);
  CHECK(plan.strategy() == "[0-2,7-7]x1 | [3-4,5-6]x2");
  // The V: model order is stage 0 chunk 0, stage 1 chunk 0, stage 1 chunk 1, stage 0 chunk 1.
  CHECK(virtual_stage_layers(plan, plan_schedule(plan)) == std::vector<LayerRange>{{0, 2}, {3, 4}, {5, 6}, {7, 7}});

  const nlohmann::json written = plan_to_json(plan, parse_cluster("1x3"));
  CHECK(written["version"] == 3);
  CHECK(written["stages"][0]["layers"] == nlohmann::json::parse("[[0, 2], [7, 7]]"));
  const Plan back = parse_plan(written.dump(), "written.json");
  CHECK(back.stages == plan.stages);
  CHECK(back.schedule == plan.schedule);
  CHECK(back.chunks == 2);
  CHECK(back.zero == 1);
}

TEST_CASE("plan file v2: looped kinds place chunk c of stage s at c*S + s; chunks defaults by kind") {
  const Plan plan = parse_plan(R"({"format": "loom-plan", "version": 2, "global_batch": 8, "microbatches": 4,
    "schedule": "interleaved", "stages": [{"layers": [[0, 0], [2, 4]], "ranks": [0]},
                                          {"layers": [[1, 1], [5, 5]], "ranks": [1]}]})", "p.json");
  CHECK(plan.chunks == 2);
  CHECK(virtual_stage_layers(plan, plan_schedule(plan)) == std::vector<LayerRange>{{0, 0}, {1, 1}, {2, 4}, {5, 5}});
  const Plan one = parse_plan(R"({"format": "loom-plan", "version": 2, "global_batch": 8, "microbatches": 4,
    "schedule": "zb-h1", "stages": [{"layers": [[0, 3]], "ranks": [0]}, {"layers": [[4, 5]], "ranks": [1]}]})", "q.json");
  CHECK(one.chunks == 1);
  CHECK(one.zero == 0);
}

TEST_CASE("plan file v1 still reads: one range per stage, dapple or gpipe") {
  const Plan plan = parse_plan(R"({"format": "loom-plan", "version": 1, "global_batch": 8, "microbatches": 2,
    "schedule": "gpipe", "stages": [{"layers": [0, 1], "ranks": [0]}, {"layers": [2, 3], "ranks": [1]}]})", "v1.json");
  CHECK(plan.schedule == ScheduleKind::gpipe);
  CHECK(plan.chunks == 1);
  CHECK(plan.zero == 0);
  CHECK(plan.stages[1].chunk_layers() == std::vector<LayerRange>{{2, 3}});
  CHECK(plan.stages[1].recompute.empty());
  const std::string v1 = R"({"format": "loom-plan", "version": 1, "global_batch": 8, "microbatches": 2,
    "schedule": "dapple", "stages": [{"layers": [0, 3], "ranks": [0]}]})";
  CHECK_THROWS_WITH(parse_plan(replaced(v1, "\"dapple\"", "\"zb-v\""), "v1.json"),
                    Catch::StartsWith("v1.json: schedule: unknown schedule 'zb-v'"));
  CHECK_THROWS_WITH(parse_plan(replaced(v1, "\"ranks\": [0]", "\"ranks\": [0], \"recompute\": []"), "v1.json"),
                    Catch::StartsWith("v1.json: unknown field stages[0].recompute"));
  CHECK_THROWS_WITH(parse_plan(replaced(v1, "\"global_batch\"", "\"zero\": 1, \"global_batch\""), "v1.json"),
                    Catch::StartsWith("v1.json: unknown field zero"));
}

TEST_CASE("plan file v2: every bad field is one error naming the file and the field") {
  const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases = {
      {{"\"version\": 2", "\"version\": 4"}, "plan.json: version: unsupported version 4 (1 to 3)"},
      {{"\"chunks\": 2", "\"chunks\": 0"}, "plan.json: chunks must be an integer in [1, 64]"},
      {{"\"chunks\": 2", "\"chunks\": 3"}, "plan.json: stages[0].layers must list 3 range(s)"},
      {{"\"zero\": 1", "\"zero\": 2"}, "plan.json: zero must be an integer in [0, 1]"},
      {{"\"zero\": 1", "\"zero\": true"}, "plan.json: zero must be an integer"},
      {{"\"schedule\": \"zb-v\"", "\"schedule\": \"zb-x\""}, "plan.json: schedule: unknown schedule 'zb-x'"},
      {{"\"schedule\": \"zb-v\"", "\"schedule\": \"dapple\""},
       "plan.json: plan: schedule dapple holds 1 chunk(s) per stage, but the plan has chunks 2"},
      {{"\"microbatches\": 4", "\"microbatches\": 3"}, "plan.json: plan: 3 micro-batches do not divide the global batch of 16"},
      {{"[[0, 2], [7, 7]]", "[[0, 2]]"}, "plan.json: stages[0].layers must list 2 range(s)"},
      {{"[[0, 2], [7, 7]]", "[0, 2]"}, "plan.json: stages[0].layers[0] must be [first, last]"},
      {{"[[0, 2], [7, 7]]", "[[0, 2], [7]]"}, "plan.json: stages[0].layers[1] must be [first, last]"},
      {{"[[0, 2], [7, 7]]", "[[0, 2], [7, -1]]"}, "plan.json: stages[0].layers[1][1] must be an integer in"},
      {{"[[0, 2], [7, 7]]", "[[0, 1], [7, 7]]"}, "plan.json: plan: virtual stage 1 covers layers 3-4 but should start at layer 2"},
      {{"\"recompute\": [0, 7]", "\"recompute\": 7"}, "plan.json: stages[0].recompute must be an array of block indices"},
      {{"\"recompute\": [0, 7]", "\"recompute\": [0, \"7\"]"}, "plan.json: stages[0].recompute[1] must be an integer"},
      {{"\"recompute\": [0, 7]", "\"recompute\": [7, 0]"}, "plan.json: plan: stage 0 recompute lists block 0 after 7"},
      {{"\"recompute\": [0, 7]", "\"recompute\": [0, 3]"}, "plan.json: plan: stage 0 recomputes block 3, which it does not hold"},
      {{"\"predicted_peak_bytes\": 1234.5", "\"predicted_peak_bytes\": -1"},
       "plan.json: stages[0].predicted_peak_bytes must be in [0, "},
      {{"\"predicted_peak_bytes\": 1234.5", "\"predicted_peak_bytes\": \"big\""},
       "plan.json: stages[0].predicted_peak_bytes must be a number"},
      {{"\"recompute\": []", "\"recompute\": [], \"chunk\": 1"}, "plan.json: unknown field stages[1].chunk"},
  };
  for (const auto& [edit, expected] : cases) {
    INFO(edit.second);
    CHECK_THROWS_WITH(parse_plan(replaced(kZbv, edit.first, edit.second), "plan.json"), Catch::StartsWith(expected));
  }
}

TEST_CASE("plan file v3: what the predictions assumed and tensor_parallel read and write back") {
  Plan plan = parse_plan(kZbv, "plan.json");
  CHECK(plan.tensor_parallel == 1);
  CHECK(plan.assumptions == PlanAssumptions{});  // a version-2 file says none
  plan.assumptions = {"adam", 2, "bf16", "cpu", "dim=64,layers=2", "1x3:mem=16GB", 16e9, "gpt.json",
                      "0123456789abcdef", "loom test"};
  plan.tensor_parallel = 2;
  const nlohmann::json written = plan_to_json(plan, parse_cluster("1x3"));
  CHECK(written["assumptions"]["optimizer"] == "adam");
  CHECK_FALSE(written.contains("simulated_step_ms"));
  const Plan back = parse_plan(written.dump(), "written.json");
  CHECK(back.assumptions == plan.assumptions);
  CHECK(back.tensor_parallel == 2);
  // Version 2's simulated_step_ms still reads; version 3 has no such field, nor an unknown assumption.
  CHECK_NOTHROW(parse_plan(replaced(kZbv, R"("predicted_step_ms": 10)", R"("simulated_step_ms": 9)"), "old.json"));
  const std::string v3 = written.dump();
  CHECK_THROWS_WITH(parse_plan(replaced(v3, R"("predicted_step_ms")", R"("simulated_step_ms": 1, "predicted_step_ms")"),
                               "p.json"),
                    Catch::Contains("simulated_step_ms"));
  CHECK_THROWS_WITH(parse_plan(replaced(v3, R"("optimizer":"adam")", R"("optimizer":"adam","zero":1)"), "p.json"),
                    Catch::Contains("p.json") && Catch::Contains("zero"));
  CHECK_THROWS_WITH(parse_plan(replaced(v3, R"("tensor_parallel":2)", R"("tensor_parallel":0)"), "p.json"),
                    Catch::Contains("tensor_parallel"));
  CHECK_THROWS_WITH(parse_plan(replaced(v3, R"("version":3)", R"("version":4)"), "p.json"),
                    Catch::Contains("unsupported version 4 (1 to 3)"));
}
