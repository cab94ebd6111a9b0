#include <catch2/catch.hpp>

#include <loom/planner/baselines.h>
#include <loom/planner/dapple_planner.h>

#include "instances.h"

using namespace loom::planner;
using namespace loom::planner::test;

TEST_CASE("data parallelism: all layers on every device; overlap never hurts") {
  const Profile p = make_profile({{1, 2, 1e6, 1e6, 2e8}, {1, 2, 1e6, 1e6, 2e8}, {1, 2, 1e6, 0, 2e8}});
  const Cluster c = make_cluster(2, 2, 50e9, 1e9, 1e12);
  const PlannerResult plain = plan_data_parallel(p, c, 16, false);
  const PlannerResult overlap = plan_data_parallel(p, c, 16, true);
  REQUIRE(plain.found);
  CHECK(plain.plan.strategy() == "[0-2]x4");
  CHECK(plain.plan.microbatches == 1);  // no memory pressure: no accumulation
  CHECK(overlap.plan.overlap_allreduce);
  CHECK(overlap.plan.predicted_step_ms <= plain.plan.predicted_step_ms);
  CHECK(overlap.objective_ms <= plain.objective_ms);
  // F + B for 4 samples per device, then the allreduce of 6e8 bytes: 2·(1/2)·W/1e9 + 2·(1/2)·W/50e9.
  CHECK(plain.objective_ms == Approx(4 * 9 + (6e8 / 1e9 + 6e8 / 50e9) * 1e3));
  // DAPPLE searches one-stage plans too, so it is never slower than plain data parallelism.
  CHECK(plan_dapple(p, c, 16).objective_ms <= plain.objective_ms + 1e-9);
}

TEST_CASE("data parallelism accumulates gradients when a share does not fit") {
  // 16 samples on 2 devices, 3e8 bytes of activations per sample, 1 GB per device:
  // M = 2 leaves 4 samples per device (1.2e9 bytes), M = 4 leaves 2 (6e8 bytes: fits).
  const Profile p = make_profile({{1, 1, 1e8, 1e8, 1e6}, {1, 1, 1e8, 1e8, 1e6}, {1, 1, 1e8, 0, 1e6}});
  const Cluster c = make_cluster(1, 2, 50e9, 1e9, 1e9);
  const PlannerResult r = plan_data_parallel(p, c, 16, false);
  REQUIRE(r.found);
  CHECK(r.plan.microbatches == 4);
  CHECK(r.plan.peak_memory_bytes <= 1e9);
}

TEST_CASE("GPipe baseline: even split over stages dividing the devices") {
  const Profile p = make_profile({{1, 1, 1e3, 1e3, 0}, {3, 3, 1e3, 1e3, 0}, {1, 1, 1e3, 1e3, 0},
                                  {1, 1, 1e3, 1e3, 0}, {2, 2, 1e3, 0, 0}});
  const Cluster c = make_cluster(1, 2, 50e9, 10e9, 1e12);
  const PlannerResult r = plan_gpipe(p, c, 8);
  REQUIRE(r.found);
  CHECK(r.plan.schedule == ScheduleKind::gpipe);
  REQUIRE(r.plan.stage_count() == 2);
  CHECK(r.plan.strategy() == "[0-1]x1 | [2-4]x1");  // work 8 | 8
  CHECK(r.plan.stages[1].devices == std::vector<int>{1});
}
