#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include <loom/planner/pipedream_planner.h>

#include "brute_force.h"
#include "instances.h"

using namespace loom::planner;
using namespace loom::planner::test;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// PipeDream's objective by enumeration: every split of layers i..j into stages and every way to
// give them exactly `units` units; the value of a split is its slowest stage or cut.
double brute_level(int i, int j, int units, double bandwidth_bytes_per_ms, const Profile& p,
                   const std::function<double(int, int)>& compute) {
  double best = kInfinity;
  const int n = j - i + 1;
  for_each_split(n, [&](const std::vector<int>& relative_last) {
    const int stages = static_cast<int>(relative_last.size());
    if (stages > units) return;
    for_each_replication(stages, units, units, [&](const std::vector<int>& replicas) {
      int sum = 0;
      for (int r : replicas) sum += r;
      if (sum != units) return;
      double worst = 0;
      int first = i;
      for (int s = 0; s < stages; ++s) {
        const int last = i + relative_last[s], m = replicas[s];
        const double weights = p.parameter_bytes(first, last);
        const double t = std::max(compute(first, last), 4.0 * (m - 1) * weights / (bandwidth_bytes_per_ms * m)) / m;
        worst = std::max(worst, t);
        if (s + 1 < stages) worst = std::max(worst, 2 * p.layers[last].cost.boundary_bytes / bandwidth_bytes_per_ms);
        first = last + 1;
      }
      best = std::min(best, worst);
    });
  });
  return best;
}

double brute_pipedream(const Profile& p, const Cluster& c) {
  auto work = [&](int i, int j) {
    double w = 0;
    for (int l = i; l <= j; ++l) w += p.layers[l].cost.forward_ms + p.layers[l].cost.backward_ms;
    return w;
  };
  const int n = p.size();
  auto in_node = [&](int i, int j) { return brute_level(i, j, c.devices_per_node, c.intra_bandwidth / 1e3, p, work); };
  if (c.nodes == 1) return in_node(0, n - 1);
  return brute_level(0, n - 1, c.nodes, c.inter_bandwidth / 1e3, p, in_node);
}

}  // namespace

TEST_CASE("PipeDream programme equals brute force under its own objective") {
  std::mt19937 rng(7);
  const int shapes[][2] = {{1, 3}, {1, 4}, {2, 1}, {2, 2}, {3, 1}, {2, 3}};
  for (int trial = 0; trial < 120; ++trial) {
    const Profile p = random_profile(rng, 1 + static_cast<int>(rng() % 7));
    const auto& shape = shapes[rng() % 6];
    std::uniform_real_distribution<double> intra(1e9, 50e9), inter(0.1e9, 3e9);
    const Cluster c = make_cluster(shape[0], shape[1], intra(rng), inter(rng), 1e12);
    INFO("trial " << trial << ": " << p.size() << " layers on " << shape[0] << "x" << shape[1]);
    const PipeDreamPartition got = pipedream_partition(p, c);
    CHECK(got.objective_ms == Approx(brute_pipedream(p, c)).epsilon(1e-12));
    // The flattened strategy covers the chain and uses every device once.
    std::vector<int> used;
    int next = 0;
    for (const StagePlan& s : got.stages) {
      CHECK(s.first_layer == next);
      next = s.last_layer + 1;
      used.insert(used.end(), s.devices.begin(), s.devices.end());
    }
    CHECK(next == p.size());
    std::sort(used.begin(), used.end());
    CHECK(used.size() == static_cast<std::size_t>(c.devices()));
    CHECK(std::adjacent_find(used.begin(), used.end()) == used.end());
  }
}

TEST_CASE("PipeDream: replicated across nodes, split inside them") {
  // Two heavy layers, no weights: the best is each node running both layers as a 2-stage
  // pipeline... or replicating; with free weights replication wins: T = work / m.
  const Profile p = make_profile({{4, 4, 1e6, 1e6, 0}, {4, 4, 1e6, 0, 0}});
  const Cluster c = make_cluster(2, 2, 10e9, 1e9, 1e12);
  const PipeDreamPartition got = pipedream_partition(p, c);
  CHECK(got.objective_ms == Approx(16.0 / 4));
  REQUIRE(got.stages.size() == 1);
  CHECK(got.stages[0].devices == std::vector<int>{0, 1, 2, 3});
  // Heavy weights make synchronisation the bottleneck: then a pipeline of 2 stages per node
  // (no weight sync inside a stage of one device) replicated on both nodes.
  const Profile heavy = make_profile({{4, 4, 1e3, 1e3, 4e9}, {4, 4, 1e3, 0, 4e9}});
  const PipeDreamPartition h = pipedream_partition(heavy, make_cluster(1, 2, 10e9, 1e9, 1e12));
  REQUIRE(h.stages.size() == 2);
  CHECK(h.objective_ms == Approx(8.0));
  CHECK(h.stages[0].devices == std::vector<int>{0});
  CHECK(h.stages[1].devices == std::vector<int>{1});
}

TEST_CASE("plan_pipedream runs the strategy synchronously with its best M") {
  const Profile p = make_profile({{1, 2, 1e6, 1e6, 1e7}, {1, 2, 1e6, 1e6, 1e7}, {1, 2, 1e6, 0, 1e7}});
  const Cluster c = make_cluster(2, 2, 50e9, 1e9, 1e12);
  const PlannerResult r = plan_pipedream(p, c, 16);
  REQUIRE(r.found);
  CHECK(r.plan.planner == "pipedream");
  const std::vector<StagePlan> stages = pipedream_partition(p, c).stages;
  REQUIRE(r.plan.stages.size() == stages.size());
  for (std::size_t s = 0; s < stages.size(); ++s) {
    CHECK(r.plan.stages[s].devices == stages[s].devices);
    CHECK(r.plan.stages[s].layers() == stages[s].layers());
    CHECK(r.plan.stages[s].predicted_peak_bytes == r.score.stages[s].peak_bytes);  // the one model's
  }
  for (int m : {1, 2, 4, 8, 16}) {
    if (16 / m < r.plan.stages[0].replicas()) continue;
    Plan other = r.plan;
    other.microbatches = m;
    CHECK(evaluate(p, c, other).step_ms >= r.objective_ms - 1e-9);
  }
  CHECK_THAT(r.note, Catch::Contains("PipeDream objective"));
}
