// Hostile inputs to the planner's readers (issue 15, defects 9, 11, 17): every one is a single
// loom::Error that names the file and the field, never a raw JSON library exception, a value cut
// to 32 bits, or an internal message later on.
#include <catch2/catch.hpp>

#include <sstream>

#include <loom/base/error.h>
#include <loom/planner/cluster.h>
#include <loom/planner/graph_profile.h>
#include <loom/planner/plan_file.h>
#include <loom/planner/profile_json.h>

#include "test_files.h"

using namespace loom::planner;
using loom::planner::test::write_temp;

namespace {

const std::string kLayer = R"({"forward_ms": 1, "backward_ms": 2, "activation_bytes": 1, "parameter_bytes": 0})";

std::string profile_with(const std::string& layers) {
  return R"({"format": "loom-profile", "version": 1, "microbatch": 1, "layers": )" + layers + "}";
}

std::string plan_with(const std::string& global_batch, const std::string& ranks) {
  return R"({"format": "loom-plan", "version": 1, "global_batch": )" + global_batch +
         R"(, "microbatches": 2, "stages": [{"layers": [0, 1], "ranks": )" + ranks + "}]}";
}

}  // namespace

TEST_CASE("JSON of the wrong shape or beyond double range names the file, not the JSON library") {
  // An array where an object is expected used to throw json's invalid_iterator.207 ("cannot use key()").
  CHECK_THROWS_WITH(parse_profile_json(profile_with("[[1, 2]]"), "p.json"),
                    Catch::StartsWith("p.json: layers[0] must be a JSON object"));
  CHECK_THROWS_WITH(parse_profile_json("[1, 2]", "p.json"), Catch::StartsWith("p.json: the document must be a JSON object"));
  CHECK_THROWS_WITH(parse_plan("[]", "plan.json"), Catch::StartsWith("plan.json: the document must be a JSON object"));
  CHECK_THROWS_WITH(parse_plan(R"({"format": "loom-plan", "version": 1, "global_batch": 8, "microbatches": 2, "stages": [[0, 1]]})", "plan.json"),
                    Catch::StartsWith("plan.json: stages[0] must be a JSON object"));
  CHECK_THROWS_WITH(read_cluster_json(write_temp("array.json", "[{\"nodes\": 1}]")),
                    Catch::Contains("array.json: the document must be a JSON object"));
  // 1e400 used to throw json's out_of_range.406 with neither file nor line.
  CHECK_THROWS_WITH(parse_profile_json(profile_with("[\n" + kLayer.substr(0, kLayer.size() - 1) +
                                                    ", \"boundary_bytes\": 1e400}]"),
                                       "big.json"),
                    Catch::StartsWith("big.json:2:") && Catch::Contains("number overflow") && Catch::Contains("1e400"));
  CHECK_THROWS_WITH(parse_plan(plan_with("1e400", "[0]"), "plan.json"),
                    Catch::StartsWith("plan.json:1:") && Catch::Contains("invalid JSON"));
  CHECK_THROWS_WITH(read_cluster_json(write_temp("big_cluster.json", "{\"nodes\": 1,\n \"devices_per_node\": 1e400}")),
                    Catch::Contains("big_cluster.json:2:") && Catch::Contains("number overflow"));
}

TEST_CASE("plan integers are read in 64 bits and range-checked, not cut to 32") {
  // 2^32 + 64 used to run as a global batch of 64; ranks [2^32] as rank 0.
  CHECK_THROWS_WITH(parse_plan(plan_with("4294967360", "[0]"), "plan.json"),
                    Catch::StartsWith("plan.json: global_batch must be an integer in [1, 2147483647], got 4294967360"));
  CHECK_THROWS_WITH(parse_plan(plan_with("8", "[4294967296]"), "plan.json"),
                    Catch::StartsWith("plan.json: stages[0].ranks[0] must be an integer in [0, 16383], got 4294967296"));
  CHECK_THROWS_WITH(parse_plan(plan_with("8", "[-1]"), "plan.json"), Catch::Contains("stages[0].ranks[0]"));
  CHECK_THROWS_WITH(parse_plan(plan_with("18446744073709551615", "[0]"), "plan.json"),
                    Catch::Contains("global_batch must be an integer"));
  CHECK_THROWS_WITH(parse_plan(plan_with("8", "[0.5]"), "plan.json"), Catch::Contains("stages[0].ranks[0] must be an integer"));
  CHECK(parse_plan(plan_with("8", "[0]"), "plan.json").global_batch == 8);
  CHECK_THROWS_WITH(read_cluster_json(write_temp("nodes.json", "{\"nodes\": 4294967297, \"devices_per_node\": 1}")),
                    Catch::Contains("nodes.json: nodes must be an integer in [1, 4096]"));
}

TEST_CASE("profile costs must be finite and within range, named by file, layer and field") {
  // forward_ms = 1e308 used to reach the planner and end in "stage 0 covers layers 0--1 but
  // should start at layer 0".
  const std::string huge = R"({"forward_ms": 1e308, "backward_ms": 2, "activation_bytes": 1, "parameter_bytes": 0})";
  CHECK_THROWS_WITH(parse_profile_json(profile_with("[" + kLayer + ", " + huge + "]"), "huge.json"),
                    Catch::StartsWith("huge.json: layer 1") && Catch::Contains("forward_ms is 1e+308") &&
                        Catch::Contains("at most 1e+07 ms"));
  const std::string bytes = R"({"forward_ms": 1, "backward_ms": 2, "activation_bytes": 1, "parameter_bytes": 1e300})";
  CHECK_THROWS_WITH(parse_profile_json(profile_with("[" + bytes + "]"), "bytes.json"),
                    Catch::StartsWith("bytes.json: layer 0") && Catch::Contains("parameter_bytes"));
  const std::string tiny = R"({"format": "loom-profile", "version": 1, "microbatch": 1e-300, "layers": [)" + kLayer + "]}";
  CHECK_THROWS_WITH(parse_profile_json(tiny, "tiny.json"), Catch::Contains("tiny.json: the profiled micro-batch size"));
  std::istringstream graph("node1 -- a -- forward_compute_time=1e308, backward_compute_time=1, activation_size=1, "
                           "parameter_size=0\n");
  CHECK_THROWS_WITH(parse_graph_profile(graph, "graph.txt", 1),
                    Catch::StartsWith("graph.txt:1: forward_compute_time=1e308 is not a non-negative number of at most 1e+07 ms"));
}

TEST_CASE("cluster sizes and quantities are range-checked by field") {
  CHECK_THROWS_WITH(parse_cluster("1x4096"), Catch::Contains("devices_per_node must be in [1, 1024], got 4096"));
  CHECK_THROWS_WITH(parse_cluster("99999999999x8"), Catch::Contains("nodes must be in [1, 4096]"));
  CHECK_THROWS_WITH(parse_cluster("99999999999999999999x8"), Catch::Contains("NODESxDEVICES"));
  CHECK_THROWS_WITH(parse_cluster("1024x1024"), Catch::Contains("nodes x devices_per_node must be in [1, 16384]"));
  CHECK_THROWS_WITH(parse_cluster("2x8:mem=1e300GB"), Catch::Contains("device_memory must be in"));
  CHECK_THROWS_WITH(read_cluster_json(write_temp("fast.json", R"({"nodes": 1, "devices_per_node": 1, "inter_bandwidth": 1e300})")),
                    Catch::Contains("fast.json: inter_bandwidth must be in"));
  CHECK(parse_cluster("16x1024").devices() == 16384);
}

TEST_CASE("JSON nested deeper than 512 levels is refused while parsing, naming the file") {
  // 100,000 levels used to parse, then overflow the stack (SIGSEGV) copying or dumping the value.
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  const std::string deep = nested(100000);
  const std::string too_deep = "JSON nested deeper than 512 levels";
  CHECK_THROWS_WITH(parse_plan(R"({"format": "loom-plan", "version": )" + deep + "}", "plan.json"),
                    Catch::StartsWith("plan.json:1:547: " + too_deep));
  CHECK_THROWS_WITH(read_plan(write_temp("deep_plan.json", plan_with("8", deep))),
                    Catch::Contains("deep_plan.json:1:") && Catch::Contains(too_deep));
  CHECK_THROWS_WITH(parse_profile_json(profile_with("[\n" + deep + "]"), "p.json"),
                    Catch::StartsWith("p.json:2:511: " + too_deep));
  CHECK_THROWS_WITH(read_profile_json(write_temp("deep_profile.json", profile_with(deep))),
                    Catch::Contains("deep_profile.json:1:") && Catch::Contains(too_deep));
  const std::string cluster = "{\"nodes\": 1, \"devices_per_node\": " + deep + "}";
  CHECK_THROWS_WITH(read_cluster_json(write_temp("deep_cluster.json", cluster)),
                    Catch::Contains("deep_cluster.json:1:545: " + too_deep));
  CHECK_THROWS_WITH(parse_cluster(write_temp("deep_spec.json", deep)), Catch::Contains("deep_spec.json:1:513: " + too_deep));
  // Unclosed, and brackets inside strings do not count.
  CHECK_THROWS_WITH(parse_plan(std::string(100000, '['), "open.json"), Catch::StartsWith("open.json:1:513: " + too_deep));
  CHECK_THROWS_WITH(parse_plan(R"({"model": "[\"[[", "version": )" + nested(512) + "}", "s.json"),
                    Catch::StartsWith("s.json:1:542: " + too_deep));
  // 512 levels in all (the document's object is the first) still parse: the field is what is wrong.
  CHECK_THROWS_WITH(parse_plan(R"({"format": "loom-plan", "version": )" + nested(511) + "}", "plan.json"),
                    Catch::StartsWith("plan.json: version must be an integer"));
}

TEST_CASE("the deepest file loom writes (a plan, 5 levels) reads back") {
  const Plan plan = parse_plan(plan_with("8", "[0]"), "plan.json");
  const std::string path = write_temp("written_plan.json", plan_to_json(plan, parse_cluster("1x1")).dump(2));
  const Plan back = read_plan(path);
  CHECK(back.global_batch == 8);
  CHECK(back.stages.size() == 1);
}
