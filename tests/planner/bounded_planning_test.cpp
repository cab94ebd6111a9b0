// Bounded planning (issue 15): coarsening is exact for the cost model, a 5000-layer chain plans
// (coarsened, reported), a time limit returns the best plan found so far (reported), and the
// micro-batch candidates of any global batch are enumerated without overflow. Times are never
// asserted; ctest's TIMEOUT bounds the whole binary.
#include <catch2/catch.hpp>

#include <climits>
#include <random>

#include <loom/planner/baselines.h>
#include <loom/planner/coarsen.h>
#include <loom/planner/cost_model.h>
#include <loom/planner/dapple_planner.h>
#include <loom/planner/pipedream_planner.h>
#include <loom/planner/plan_score.h>

#include "instances.h"

using namespace loom::planner;
using namespace loom::planner::test;

namespace {

Profile chain(int layers, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> ms(0.5, 2.0), bytes(1e5, 4e6);
  std::vector<LayerSpec> specs;
  for (int l = 0; l < layers; ++l) {
    const double f = ms(rng);
    specs.push_back({f, 2 * f, bytes(rng), bytes(rng) / 4, bytes(rng)});
  }
  return make_profile(specs, 8);
}

// The plan is a plan of all `layers` on the cluster, and fits.
void require_complete(const PlannerResult& result, const Profile& profile, const Cluster& cluster) {
  REQUIRE(result.found);
  REQUIRE_NOTHROW(validate(result.plan, profile.size(), cluster.devices()));
  const PlanCost cost = evaluate(profile, cluster, result.plan);
  CHECK(cost.feasible);
  CHECK(result.objective_ms == Approx(cost.step_ms));
}

}  // namespace

TEST_CASE("coarsening sums costs exactly, and a plan of groups scores the same on the original chain") {
  Profile profile = chain(40, 7);
  profile.layers[3].extra.push_back({16, {1.0, 2.5, 3e6, 1e6}});
  profile.layers[4].extra.push_back({4, {0.3, 0.7, 1e6, 2e5}});
  const Coarsening coarse = coarsen(profile, 6);
  REQUIRE(coarse.profile.size() == 6);
  REQUIRE(coarse.last_layers.back() == 39);
  for (double size : {1.0, 4.0, 8.0, 12.0, 16.0, 40.0}) {
    double fine = 0, merged = 0;
    for (int l = 0; l < profile.size(); ++l) fine += profile.cost_at(l, size).forward_ms;
    for (int g = 0; g < coarse.profile.size(); ++g) merged += coarse.profile.cost_at(g, size).forward_ms;
    CHECK(merged == Approx(fine));
  }
  const Cluster cluster = make_cluster(1, 4, 100e9, 10e9, 16e9);
  Plan plan;
  plan.global_batch = 32;
  plan.microbatches = 4;
  plan.stages = {{0, 2, {0, 1}}, {3, 5, {2, 3}}};
  const Plan fine_plan = refine(plan, coarse);
  CHECK(fine_plan.stages[0].first_layer == 0);
  CHECK(fine_plan.stages[0].last_layer == coarse.last_layers[2]);
  CHECK(fine_plan.stages[1].first_layer == coarse.last_layers[2] + 1);
  CHECK(fine_plan.stages[1].last_layer == 39);
  CHECK(evaluate(coarse.profile, cluster, plan).step_ms == Approx(evaluate(profile, cluster, fine_plan).step_ms));
  CHECK(coarsen(profile, 100).profile.size() == 40);  // short enough already: unchanged
}

TEST_CASE("a 5000-layer chain on 2x8 plans with every planner, coarsened and reported as such") {
  const Profile profile = chain(5000, 11);
  const Cluster cluster = make_cluster(2, 8, 130e9, 25e9 / 8, 64e9);  // PipeDream's plan ignores memory
  PlannerOptions options;
  options.simulate_candidates = 5;
  for (const PlannerResult& result :
       {plan_dapple(profile, cluster, 64, options), plan_pipedream(profile, cluster, 64, options),
        plan_gpipe(profile, cluster, 64, options)}) {
    INFO(result.plan.planner << ": " << result.note);
    require_complete(result, profile, cluster);
    CHECK(result.coarsened_from == 5000);
    CHECK(result.coarsened_to > 1);
    CHECK(result.coarsened_to < 5000);
    CHECK(result.note.find("coarsened") != std::string::npos);
  }
}

TEST_CASE("a time limit returns the best plan found so far, marked time-limited") {
  const Profile profile = chain(60, 3);
  const Cluster cluster = make_cluster(2, 8, 130e9, 25e9 / 8, 16e9);
  PlannerOptions options;
  options.time_limit_s = 1e-9;  // expires after the first micro-batch count's uniform plans
  const PlannerResult limited = plan_dapple(profile, cluster, 64, options);
  require_complete(limited, profile, cluster);
  CHECK(limited.search == "time-limited");
  CHECK(limited.note.find("time-limited") != std::string::npos);
  const PlannerResult exact = plan_dapple(profile, cluster, 64);
  CHECK(exact.search == "exact");
  CHECK(exact.objective_ms <= limited.objective_ms * (1 + 1e-9));
}

TEST_CASE("micro-batch candidates of any global batch, without overflow, within the schedule's limits") {
  // The candidate loop ran an int up to INT_MAX and divided by zero when it wrapped.
  CHECK(microbatch_candidates(INT_MAX, {}) == std::vector<int>{1});  // a prime; M = INT_MAX is too many
  const std::vector<int> powers = microbatch_candidates(1 << 30, {}, 16);
  CHECK(powers.front() == 1);
  CHECK(powers.back() == 32768);  // 2^19 schedule cells over 16 devices
  CHECK(microbatch_candidates(12, {}) == std::vector<int>{1, 2, 3, 4, 6, 12});
  PlannerOptions explicit_counts;
  explicit_counts.microbatch_counts = {1 << 20};
  CHECK_THROWS_WITH(microbatch_candidates(1 << 30, explicit_counts), Catch::Contains("micro-batch count 1048576"));
  const Profile two = make_profile({{1, 2, 1, 1, 1e6}, {1, 2, 1, 1, 1e6}});
  const Cluster cluster = make_cluster(1, 2, 100e9, 10e9, 1e15);
  const PlannerResult result = plan_dapple(two, cluster, INT_MAX);
  require_complete(result, two, cluster);
  CHECK(result.plan.global_batch == INT_MAX);
  CHECK(score_plan(two, cluster, result.plan).simulation.step_ms == Approx(result.plan.predicted_step_ms));
}
