#include <catch2/catch.hpp>

#include <loom/base/error.h>
#include <loom/planner/profile.h>

using namespace loom::planner;

namespace {

Profile one_layer(double microbatch, LayerCost cost, double params = 100) {
  Profile p;
  p.source = "test";
  p.microbatch = microbatch;
  p.layers.push_back({"l0", cost, params, {}});
  return p;
}

}  // namespace

TEST_CASE("costs scale linearly with the micro-batch size, parameters do not") {
  const Profile p = one_layer(4, {2.0, 6.0, 400, 100});
  const LayerCost c = p.cost_at(0, 10);
  CHECK(c.forward_ms == Approx(5.0));
  CHECK(c.backward_ms == Approx(15.0));
  CHECK(c.activation_bytes == Approx(1000));
  CHECK(c.boundary_bytes == Approx(250));
  CHECK(p.parameter_bytes(0, 0) == 100);
}

TEST_CASE("measured sizes are interpolated, and scaled beyond the measured range") {
  Profile p = one_layer(4, {2.0, 4.0, 400, 400});
  p.layers[0].extra.push_back({8, {3.0, 5.0, 800, 800}});  // less than linear between 4 and 8
  CHECK(p.cost_at(0, 4).forward_ms == Approx(2.0));
  CHECK(p.cost_at(0, 6).forward_ms == Approx(2.5));
  CHECK(p.cost_at(0, 6).backward_ms == Approx(4.5));
  CHECK(p.cost_at(0, 16).forward_ms == Approx(6.0));  // proportional to the size-8 point
  CHECK(p.cost_at(0, 2).forward_ms == Approx(1.0));   // proportional to the size-4 point
}

TEST_CASE("validate rejects negative costs and duplicate measurement sizes") {
  Profile bad = one_layer(4, {-1.0, 1.0, 0, 0});
  CHECK_THROWS_WITH(validate(bad), Catch::Contains("layer 0") && Catch::Contains("non-negative"));
  Profile dup = one_layer(4, {1.0, 1.0, 0, 0});
  dup.layers[0].extra.push_back({4, {1.0, 1.0, 0, 0}});
  CHECK_THROWS_AS(validate(dup), loom::Error);
  Profile empty;
  empty.source = "e.json";
  CHECK_THROWS_WITH(validate(empty), Catch::Contains("e.json") && Catch::Contains("no layers"));
}
