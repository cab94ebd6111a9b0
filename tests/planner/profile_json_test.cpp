#include <catch2/catch.hpp>

#include <loom/core/error.h>
#include <loom/planner/profile_json.h>

#include "test_files.h"

using namespace loom::planner;
using loom::planner::test::write_temp;

TEST_CASE("profile JSON round-trips, measurements included") {
  Profile p;
  p.model = "tiny";
  p.device = "cpu";
  p.microbatch = 8;
  p.layers.push_back({"embed", {1.0, 2.0, 300, 300}, 4000, {}});
  p.layers.push_back({"block", {3.0, 4.0, 500, 200}, 6000, {{16, {5.0, 7.0, 1000, 400}}}});
  const std::string path = write_temp("roundtrip.json", "");
  write_profile_json(p, path);
  const Profile q = load_profile(path);
  CHECK(q.model == "tiny");
  CHECK(q.device == "cpu");
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
