// The joint search (issue 29) against exhaustive enumeration under the same model: on small random
// problems (<= 6 layers, <= 4 devices, every synchronous kind, every M dividing the batch, memory
// caps from loose to binding), every partition into S·v ranges and every replica vector summing to
// the cluster's devices, each run through evaluate_partition(); the planner's step time must equal
// the fastest that fits, and its plan must fit when evaluated again.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include <loom/core/error.h>
#include <loom/planner/joint_planner.h>

#include "instances.h"

using namespace loom::planner;
using namespace loom::planner::test;

namespace {

// Every way to write `total` as `parts` positive numbers, in order.
void compositions(int total, int parts, std::vector<int>& current, std::vector<std::vector<int>>& out) {
  if (parts == 0) {
    if (total == 0) out.push_back(current);
    return;
  }
  for (int first = 1; first <= total - (parts - 1); ++first) {
    current.push_back(first);
    compositions(total - first, parts - 1, current, out);
    current.pop_back();
  }
}

std::vector<std::vector<int>> compositions(int total, int parts) {
  std::vector<std::vector<int>> out;
  std::vector<int> current;
  compositions(total, parts, current, out);
  return out;
}

struct Exhaustive {
  double step_ms = std::numeric_limits<double>::infinity();
  long evaluated = 0;
};

void try_partition(const Profile& profile, const Cluster& cluster, const Partition& p, Exhaustive& best) {
  ++best.evaluated;
  try {
    const PartitionEvaluation e = evaluate_partition(profile, cluster, p);
    if (e.fits && e.simulation.step_ms < best.step_ms) best.step_ms = e.simulation.step_ms;
  } catch (const loom::Error&) {  // a size the kind refuses, or a replica without rows
  }
}

Exhaustive exhaustive(const Profile& profile, const Cluster& cluster, int global_batch) {
  Exhaustive best;
  const int devices = cluster.devices();
  for (const auto kind : joint_kinds()) {
    const int v = joint_chunks(kind);
    for (int stages = 1; stages <= devices && stages * v <= profile.size(); ++stages)
      for (const std::vector<int>& sizes : compositions(profile.size(), stages * v))
        for (const std::vector<int>& replicas : compositions(devices, stages))
          for (int m = 1; m <= global_batch; ++m) {
            if (global_batch % m != 0) continue;
            bool rows_for_all = true;
            for (int r : replicas) rows_for_all = rows_for_all && r <= global_batch / m;
            if (!rows_for_all) continue;
            Partition p{kind, v, m, global_batch, {}, replicas};
            int first = 0;
            for (int size : sizes) {
              p.layers.emplace_back(first, first + size - 1);
              first += size;
            }
            try_partition(profile, cluster, p, best);
          }
  }
  return best;
}

}  // namespace

TEST_CASE("joint: the search's optimum equals exhaustive enumeration, and its plan fits") {
  std::mt19937 rng(29);
  const int shapes[][2] = {{1, 2}, {1, 3}, {2, 2}, {1, 4}};
  for (int trial = 0; trial < 8; ++trial) {
    const int layers = 4 + trial % 3;
    const Profile profile = random_profile(rng, layers);
    const int* shape = shapes[trial % 4];
    const double weights = profile.parameter_bytes(0, layers - 1) * 4;
    for (const double cap : {1e12, weights / 2, weights / 3}) {
      const Cluster cluster = make_cluster(shape[0], shape[1], 10e9, 1e9, cap);
      const int global_batch = trial % 2 == 0 ? 8 : 6;
      CAPTURE(trial, layers, shape[0], shape[1], cap, global_batch);
      const Exhaustive expected = exhaustive(profile, cluster, global_batch);
      const JointResult joint = plan_joint(profile, cluster, global_batch);
      REQUIRE(joint.found == std::isfinite(expected.step_ms));
      if (!joint.found) continue;
      CHECK(joint.evaluation.simulation.step_ms == Approx(expected.step_ms).epsilon(1e-12));
      CHECK(joint.evaluated <= expected.evaluated);
      const PartitionEvaluation again = evaluate_partition(profile, cluster, joint.partition);
      CHECK(again.fits);
      CHECK(again.peak_bytes <= cap);
      CHECK(again.simulation.step_ms == joint.evaluation.simulation.step_ms);
    }
  }
}

TEST_CASE("joint: no plan when no stage's weights fit, and the time limit stops the search") {
  std::mt19937 rng(3);
  const Profile profile = random_profile(rng, 5);
  const JointResult none = plan_joint(profile, make_cluster(1, 2, 10e9, 1e9, 1.0), 4);
  CHECK_FALSE(none.found);
  CHECK(none.why_none.find("more weights, gradients and optimizer state than a device holds") != std::string::npos);
  // Weights fit, activations do not: the closest candidate names its stage and the bytes over.
  const JointResult tight = plan_joint(profile, make_cluster(1, 1, 10e9, 1e9, profile.parameter_bytes(0, 4) * 4 + 1), 4);
  CHECK_FALSE(tight.found);
  CHECK(tight.why_none.find("more than the") != std::string::npos);
  JointOptions options;
  options.time_limit_s = 1e-9;
  CHECK(plan_joint(profile, make_cluster(1, 4, 10e9, 1e9, 1e12), 8, options).search == "time-limited");
}
