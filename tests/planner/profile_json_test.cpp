#include <catch2/catch.hpp>

#include <loom/base/error.h>
#include <loom/planner/profile_json.h>

#include "test_files.h"

using namespace loom::planner;
using loom::planner::test::write_temp;

TEST_CASE("profile JSON round-trips, measurements included") {
  Profile p;
  p.model = "tiny";
  p.device = "cpu";
  p.model_size = "cpu";
  p.model_settings = "hidden=64,layers=2";
  p.precision = "bf16";
  p.microbatch = 8;
  p.layers.push_back({"embed", {1.0, 2.0, 300, 300}, 4000, {}});
  p.layers.push_back({"block", {3.0, 4.0, 500, 200}, 6000, {{16, {5.0, 7.0, 1000, 400}}}});
  const std::string path = write_temp("roundtrip.json", "");
  write_profile_json(p, path);
  const Profile q = load_profile(path);
  CHECK(q.model == "tiny");
  CHECK(q.device == "cpu");
  CHECK(q.model_size == "cpu");
  CHECK(q.model_settings == "hidden=64,layers=2");
  CHECK(q.precision == "bf16");
  CHECK(q.microbatch == 8);
  REQUIRE(q.size() == 2);
  CHECK(q.layers[1].name == "block");
  CHECK(q.layers[1].cost.boundary_bytes == 200);
  CHECK(q.layers[1].parameter_bytes == 6000);
  REQUIRE(q.layers[1].extra.size() == 1);
  CHECK(q.layers[1].extra[0].microbatch == 16);
  CHECK(q.cost_at(1, 12).forward_ms == Approx(4.0));
}

TEST_CASE("boundary_bytes defaults to activation_bytes") {
  const Profile p = parse_profile_json(
      R"({"format": "loom-profile", "version": 1, "microbatch": 2,
          "layers": [{"forward_ms": 1, "backward_ms": 2, "activation_bytes": 64, "parameter_bytes": 8}]})",
      "p.json");
  CHECK(p.layers[0].cost.boundary_bytes == 64);
}

TEST_CASE("malformed profile JSON names the file and the line or the field") {
  const std::string syntax = "{\"format\": \"loom-profile\",\n \"version\": 1,\n \"microbatch\": 2,,\n}";
  CHECK_THROWS_WITH(load_profile(write_temp("syntax.json", syntax)),
                    Catch::Contains("syntax.json:3:") && Catch::Contains("invalid JSON"));
  const std::string missing = R"({"format": "loom-profile", "version": 1, "microbatch": 2,
      "layers": [{"forward_ms": 1, "activation_bytes": 1, "parameter_bytes": 0}]})";
  CHECK_THROWS_WITH(parse_profile_json(missing, "m.json"),
                    Catch::StartsWith("m.json") && Catch::Contains("layers[0].backward_ms"));
  const std::string typo = R"({"format": "loom-profile", "version": 1, "microbatch": 2,
      "layers": [{"forward_ms": 1, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 0, "paramters": 3}]})";
  CHECK_THROWS_WITH(parse_profile_json(typo, "t.json"), Catch::Contains("unknown field layers[0].paramters"));
  const std::string negative = R"({"format": "loom-profile", "version": 1, "microbatch": 2,
      "layers": [{"forward_ms": -1, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 0}]})";
  CHECK_THROWS_WITH(parse_profile_json(negative, "n.json"), Catch::StartsWith("n.json") && Catch::Contains("layer 0"));
  CHECK_THROWS_WITH(parse_profile_json(R"({"format": "other", "version": 1})", "f.json"),
                    Catch::Contains("f.json") && Catch::Contains("format"));
}

// Issue 29: ties (a parameter two layers share) round-trip, and a bad one names the field.
TEST_CASE("profile JSON carries ties") {
  Profile p;
  p.model = "tied";
  p.microbatch = 1;
  p.layers.push_back({"embed", {1.0, 2.0, 300, 300}, 4000, {}});
  p.layers.push_back({"head", {3.0, 4.0, 500, 200}, 4100, {}});
  p.ties.push_back({0, 1, 4000});
  const Profile q = parse_profile_json(profile_to_json(p).dump(), "tied.json");
  REQUIRE(q.ties.size() == 1);
  CHECK(q.ties[0].canonical_layer == 0);
  CHECK(q.ties[0].copy_layer == 1);
  CHECK(q.ties[0].bytes == 4000);
  nlohmann::json bad = profile_to_json(p);
  bad["ties"][0]["layers"] = {0, 2};
  CHECK_THROWS_WITH(parse_profile_json(bad.dump(), "tied.json"),
                    Catch::StartsWith("tied.json: ties[0] names layers 0 and 2 of a 2-layer profile"));
  bad["ties"][0] = {{"layers", {0}}, {"bytes", 1}};
  CHECK_THROWS_WITH(parse_profile_json(bad.dump(), "tied.json"),
                    Catch::StartsWith("tied.json: ties[0].layers must be [canonical, copy]"));
  bad["ties"][0] = {{"layers", {0, 1}}, {"bytes", -1}};
  CHECK_THROWS_WITH(parse_profile_json(bad.dump(), "tied.json"), Catch::StartsWith("tied.json: ties[0].bytes must be in"));
}

// Issue 29: version 2 carries what the joint search's time and memory model needs (BI and BW
// times, working sets, what a BI holds for its BW; the data and the optimizer step); version 1
// still reads, with BI = BW = half of B and nothing else held.
TEST_CASE("profile JSON version 2 round-trips the split backward, the working sets and the data") {
  Profile p;
  p.model = "v2";
  p.microbatch = 4;
  // forward, backward, activation, boundary, BI, BW, then the forward, backward, BI and BW working
  // sets, the split hold and what the next block keeps.
  LayerCost cost{1.0, 3.0, 300, 100, 1.25, 2.0, 40, 50, 70, 80, 60, 30};
  p.layers.push_back({"only", cost, 1000, {{8, {2.0, 6.0, 600, 200, 2.5, 4.0, 80, 100, 140, 160, 120, 60}}}});
  p.input_bytes = 512;
  p.target_bytes = 16;
  p.data_ms = 0.5;
  p.step_ms_per_mb = {{"sgd", 0.04}, {"adam", 0.25}};
  const nlohmann::json doc = profile_to_json(p);
  CHECK(doc["version"] == 2);
  const Profile q = parse_profile_json(doc.dump(), "v2.json");
  const LayerCost& c = q.layers[0].cost;
  CHECK(c.backward_input_ms == 1.25);
  CHECK(c.backward_weight_ms == 2.0);
  CHECK(c.forward_workspace_bytes == 40);
  CHECK(c.backward_workspace_bytes == 50);
  CHECK(c.split_held_bytes == 60);
  CHECK(c.input_workspace_bytes == 70);
  CHECK(c.weight_workspace_bytes == 80);
  CHECK(c.next_kept_bytes == 30);
  CHECK(q.input_bytes == 512);
  CHECK(q.target_bytes == 16);
  CHECK(q.data_ms == 0.5);
  CHECK(q.step_ms_per_mb_of("momentum") == 0.04);  // loom train's sgd and momentum: the sgd measurement
  CHECK(q.step_ms_per_mb_of("adamw") == 0.25);
  // Interpolated between the measurements like the other costs (halfway: 6 samples).
  const LayerCost mid = q.cost_at(0, 6);
  CHECK(mid.backward_input_ms == Approx(1.875));
  CHECK(mid.weight_workspace_bytes == Approx(120));
  CHECK(mid.split_held_bytes == Approx(90));
  CHECK(mid.next_kept_bytes == Approx(45));
}

TEST_CASE("profile JSON version 1 reads with the stated defaults; bad version-2 fields are named") {
  const Profile p = parse_profile_json(
      R"({"format": "loom-profile", "version": 1, "microbatch": 2,
          "layers": [{"forward_ms": 1, "backward_ms": 3, "activation_bytes": 64, "parameter_bytes": 8}]})",
      "v1.json");
  const LayerCost c = p.cost_at(0, 4);
  CHECK(c.input_ms() == Approx(3.0));  // half of the B at 4 samples (6 ms)
  CHECK(c.weight_ms() == Approx(3.0));
  CHECK(c.backward_workspace_bytes == 0);
  CHECK(p.step_ms_per_mb_of("adam") == 0);
  const std::string head = R"({"format": "loom-profile", "version": 2, "microbatch": 2, )";
  const std::string layer = R"("layers": [{"forward_ms": 1, "backward_ms": 3, "activation_bytes": 64, "parameter_bytes": 8)";
  CHECK_THROWS_WITH(parse_profile_json(head + layer + R"(, "backward_input_ms": 1}]})", "s.json"),
                    Catch::StartsWith("s.json") && Catch::Contains("backward_weight_ms"));
  // A BI may free part of its block's activations, but not more than all 64 bytes of them.
  CHECK(parse_profile_json(head + layer + R"(, "split_held_bytes": -64}]})", "h.json").layers[0].cost.split_held_bytes == -64);
  CHECK_THROWS_WITH(parse_profile_json(head + layer + R"(, "split_held_bytes": -65}]})", "h.json"),
                    Catch::StartsWith("h.json: layer 0") && Catch::Contains("split_held_bytes is -65; it must be finite, at least minus its activation_bytes (64)"));
  CHECK_THROWS_WITH(parse_profile_json(head + layer + R"(, "next_kept_bytes": 65}]})", "n.json"),
                    Catch::StartsWith("n.json: layer 0") && Catch::Contains("next_kept_bytes is 65, more than its activation_bytes 64"));
  CHECK_THROWS_WITH(parse_profile_json(head + R"("data_ms": -1, )" + layer + "}]}", "d.json"),
                    Catch::StartsWith("d.json: data_ms is -1"));
  CHECK_THROWS_WITH(parse_profile_json(head + R"("step_ms_per_mb": 3, )" + layer + "}]}", "o.json"),
                    Catch::StartsWith("o.json: step_ms_per_mb must be an object"));
  CHECK_THROWS_WITH(parse_profile_json(R"({"format": "loom-profile", "version": 3, "microbatch": 2, )" + layer + "}]}",
                                       "3.json"),
                    Catch::StartsWith("3.json: unsupported version 3 (expected 1 or 2)"));
}
