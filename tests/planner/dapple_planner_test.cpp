#include <catch2/catch.hpp>

#include <random>

#include <loom/planner/dapple_planner.h>
#include <loom/planner/plan_score.h>

#include "brute_force.h"
#include "instances.h"

using namespace loom::planner;
using namespace loom::planner::test;

TEST_CASE("DAPPLE planner: optimum equals brute force on random small instances") {
  std::mt19937 rng(20240601);
  const int batches[] = {4, 6, 8, 12};
  int feasible = 0, pipelined = 0, replicated_pipeline = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const int layers = 1 + static_cast<int>(rng() % 8);
    const Profile profile = random_profile(rng, layers);
    const int shape = static_cast<int>(rng() % 3);
    const int nodes = shape == 0 ? 1 : 2, per_node = shape == 1 ? 1 : 2;
    std::uniform_real_distribution<double> intra(5e9, 100e9), inter(0.3e9, 5e9), memory_scale(0.3, 3.0);
    const double memory = profile.total_parameter_bytes() * 4 * memory_scale(rng) + 2e7;
    const Cluster cluster = make_cluster(nodes, per_node, intra(rng), inter(rng), memory);
    const int global_batch = batches[rng() % 4];
    INFO("trial " << trial << ": " << layers << " layers, " << nodes << "x" << per_node << ", batch " << global_batch);

    const double expected = brute_force_dapple(profile, cluster, global_batch);
    const PlannerResult got = plan_dapple(profile, cluster, global_batch);
    if (!std::isfinite(expected)) {
      CHECK_FALSE(got.found);
      continue;
    }
    REQUIRE(!got.plan.stages.empty());
    CHECK(got.objective_ms == Approx(expected).epsilon(1e-9));
    // The plan it returns scores exactly what the search said, and the one model's score is its prediction.
    CHECK(evaluate(profile, cluster, got.plan).step_ms == Approx(got.objective_ms).epsilon(1e-12));
    const PartitionEvaluation score = score_plan(profile, cluster, got.plan);
    CHECK(got.plan.predicted_step_ms == score.simulation.step_ms);
    CHECK(got.found == score.fits);  // the one model's memory, which counts what the objective's leaves out
    ++feasible;
    if (got.plan.stage_count() > 1) ++pipelined;
    if (got.plan.stage_count() > 1 && got.plan.devices_used() > got.plan.stage_count()) ++replicated_pipeline;
  }
  // The instances must exercise the interesting cases, not only trivial ones.
  CHECK(feasible > 100);
  CHECK(pipelined > 20);
  CHECK(replicated_pipeline > 3);
}

TEST_CASE("DAPPLE planner: optimum equals brute force with overlapped allreduce too") {
  std::mt19937 rng(99);
  PlannerOptions options;
  options.cost.overlap_allreduce = true;
  for (int trial = 0; trial < 60; ++trial) {
    const Profile profile = random_profile(rng, 1 + static_cast<int>(rng() % 7));
    const int nodes = 1 + static_cast<int>(rng() % 2), per_node = 2;
    std::uniform_real_distribution<double> inter(0.3e9, 3e9), memory_scale(0.5, 3.0);
    const Cluster cluster = make_cluster(nodes, per_node, 20e9, inter(rng),
                                         profile.total_parameter_bytes() * 4 * memory_scale(rng) + 2e7);
    const int global_batch = 4 << (rng() % 2);
    INFO("trial " << trial);
    const double expected = brute_force_dapple(profile, cluster, global_batch, true);
    const PlannerResult got = plan_dapple(profile, cluster, global_batch, options);
    REQUIRE(got.plan.stages.empty() == !std::isfinite(expected));
    if (got.plan.stages.empty()) continue;
    CHECK(got.plan.overlap_allreduce);
    CHECK(got.objective_ms == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("DAPPLE planner: simulated candidates never do worse in the simulator than the optimum") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const Profile profile = random_profile(rng, 3 + static_cast<int>(rng() % 5));
    const Cluster cluster = make_cluster(2, 2, 20e9, 0.5e9, 1e12);
    PlannerOptions exact, simulated;
    simulated.simulate_candidates = 16;
    const PlannerResult a = plan_dapple(profile, cluster, 8, exact);
    const PlannerResult b = plan_dapple(profile, cluster, 8, simulated);
    REQUIRE(a.found);
    REQUIRE(b.found);
    CHECK(evaluate(profile, cluster, b.plan).step_ms >= a.objective_ms - 1e-9);  // a is the objective's optimum
    CHECK(b.objective_ms == a.objective_ms);
    CHECK(b.plan.predicted_step_ms <= score_plan(profile, cluster, a.plan).simulation.step_ms + 1e-9);
    CHECK(a.plan.predicted_step_ms == Approx(score_plan(profile, cluster, a.plan).simulation.step_ms));
  }
}

TEST_CASE("DAPPLE planner: a memory limit forces a pipeline") {
  // Four identical layers; each holds 1 GB of weights (4 GB with gradients and Adam state).
  const Profile p = make_profile({{1, 2, 1e6, 1e6, 1e9}, {1, 2, 1e6, 1e6, 1e9}, {1, 2, 1e6, 1e6, 1e9},
                                  {1, 2, 1e6, 1e6, 1e9}});
  const Cluster roomy = make_cluster(1, 4, 100e9, 10e9, 100e9);
  const Cluster tight = make_cluster(1, 4, 100e9, 10e9, 9e9);  // at most 2 layers per device
  const PlannerResult a = plan_dapple(p, roomy, 16);
  const PlannerResult b = plan_dapple(p, tight, 16);
  REQUIRE(a.found);
  REQUIRE(b.found);
  CHECK(b.plan.stage_count() >= 2);
  for (const StagePlan& s : b.plan.stages) CHECK(s.layers() <= 2);
  CHECK(evaluate(p, tight, b.plan).peak_memory_bytes <= 9e9);  // the search's model
  CHECK(b.plan.peak_memory_bytes <= 9e9);                       // the one model
  CHECK(b.objective_ms >= a.objective_ms);
  const Cluster impossible = make_cluster(1, 4, 100e9, 10e9, 3e9);
  CHECK_FALSE(plan_dapple(p, impossible, 16).found);
}
