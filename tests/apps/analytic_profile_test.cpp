// The analytic profile (`loom profile --device-model`): a paper-size BERT-48 layer on the V100
// model costs the hand-counted FLOPs of a transformer layer at fp32 peak (it is compute-bound),
// the embedding is bandwidth-bound, and nothing is allocated for the 669 M parameters.
#include <catch2/catch.hpp>

#include <loom/core/memory.h>

#include "analytic_profile.h"

using namespace loom;

TEST_CASE("the analytic V100 profile of BERT-48 is the roofline of its FLOPs and bytes", "[profile]") {
  const std::int64_t before = memory_stats().live_bytes;
  const planner::DeviceModel& v100 = planner::find_device_model("v100");
  const planner::Profile p = apps::analytic_profile(make_model("bert48"), 2, v100);
  CHECK(memory_stats().live_bytes == before);
  REQUIRE(p.size() == 50);
  // B x T = 2 x 512 tokens, d = 1024, ffn 4096: GEMMs 2BT(4d^2 + 2 d ffn) + attention 4 B T^2 d.
  const double b = 2, t = 512, d = 1024, f = 4096;
  const double flops = 2 * b * t * (4 * d * d + 2 * d * f) + 4 * b * t * t * d;
  CHECK(p.layers[1].cost.forward_ms == Approx(flops / 15.7e12 * 1e3).epsilon(0.01));
  CHECK(p.layers[1].cost.backward_ms == Approx(2 * p.layers[1].cost.forward_ms).epsilon(0.01));
  // The embedding moves its 127 MB table at 900 GB/s: bandwidth-bound, about 0.14 ms.
  CHECK(p.layers[0].cost.forward_ms == Approx(127131648.0 / 900e9 * 1e3).epsilon(0.1));
  CHECK(p.layers[1].cost.boundary_bytes == b * t * d * 4);
  CHECK_THROWS_WITH(planner::find_device_model("tpu"), Catch::Contains("v100, a100, h100 or h200"));
}
