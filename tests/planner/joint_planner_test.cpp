// The joint search (issue 29) against exhaustive enumeration under the same model: on small random
// problems (<= 6 layers, <= 4 devices, every synchronous kind, every M dividing the batch, memory
// caps from loose to binding), every partition into S·v ranges and every replica vector summing to
// the cluster's devices, each run through evaluate_partition(); the planner's step time must equal
// the fastest that fits, and its plan must fit when evaluated again.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include <loom/base/error.h>
#include <loom/planner/baselines.h>
#include <loom/planner/dapple_planner.h>
#include <loom/planner/joint_planner.h>
#include <loom/planner/pipedream_planner.h>

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
  std::map<std::pair<int, int>, double> by_kind_and_m;  // the fastest that fits of each (kind, M)
};

void try_partition(const Profile& profile, const Cluster& cluster, const Partition& p, Exhaustive& best) {
  ++best.evaluated;
  try {
    const PartitionEvaluation e = evaluate_partition(profile, cluster, p);
    if (!e.fits) return;
    best.step_ms = std::min(best.step_ms, e.simulation.step_ms);
    const auto key = std::make_pair(static_cast<int>(p.kind), p.microbatches);
    const auto [at, added] = best.by_kind_and_m.emplace(key, e.simulation.step_ms);
    if (!added) at->second = std::min(at->second, e.simulation.step_ms);
  } catch (const loom::Error&) {  // a size the kind refuses, or a replica without rows
  }
}

// Every subset of each stage's layers recomputed, each combination over the stages.
void try_recomputation(const Profile& profile, const Cluster& cluster, Partition p, Exhaustive& best) {
  const int stages = static_cast<int>(p.layers.size()) / p.chunks;
  std::vector<std::vector<std::vector<int>>> subsets;
  const std::vector<int> placement = loom::schedule::is_v_shaped(p.kind) ? loom::schedule::v_placement(stages)
                                                                          : std::vector<int>{};
  for (int s = 0; s < stages; ++s) {
    std::vector<int> layers;
    for (int c = 0; c < p.chunks; ++c) {
      const int v = placement.empty() ? c * stages + s : placement[static_cast<std::size_t>(c * stages + s)];
      for (int l = p.layers[static_cast<std::size_t>(v)].first; l <= p.layers[static_cast<std::size_t>(v)].second; ++l)
        layers.push_back(l);
    }
    std::sort(layers.begin(), layers.end());
    subsets.emplace_back();
    for (unsigned mask = 0; mask < (1u << layers.size()); ++mask) {
      subsets.back().emplace_back();
      for (std::size_t i = 0; i < layers.size(); ++i)
        if (mask & (1u << i)) subsets.back().back().push_back(layers[i]);
    }
  }
  std::vector<std::size_t> pick(static_cast<std::size_t>(stages), 0);
  for (;;) {
    p.recompute.clear();
    for (int s = 0; s < stages; ++s) p.recompute.push_back(subsets[s][pick[static_cast<std::size_t>(s)]]);
    try_partition(profile, cluster, p, best);
    int s = stages - 1;
    while (s >= 0 && ++pick[static_cast<std::size_t>(s)] == subsets[s].size()) pick[static_cast<std::size_t>(s--)] = 0;
    if (s < 0) return;
  }
}

// Every candidate of the joint search's space (of `kinds`), each partition under every
// recomputation, with and without ZeRO-1, when `recompute`.
Exhaustive exhaustive(const Profile& profile, const Cluster& cluster, int global_batch,
                      const std::vector<loom::schedule::ScheduleKind>& kinds = joint_kinds(), bool recompute = false) {
  Exhaustive best;
  const int devices = cluster.devices();
  for (const auto kind : kinds) {
    const int v = joint_chunks(kind);
    for (int stages = 1; stages <= devices && stages * v <= profile.size(); ++stages)
      for (const std::vector<int>& sizes : compositions(profile.size(), stages * v))
        for (const std::vector<int>& replicas : compositions(devices, stages))
          for (int m = 1; m <= global_batch; ++m) {
            if (global_batch % m != 0) continue;
            bool rows_for_all = true;
            for (int r : replicas) rows_for_all = rows_for_all && r <= global_batch / m;
            if (!rows_for_all) continue;
            Partition p{kind, v, m, global_batch, {}, replicas, {}};
            int first = 0;
            for (int size : sizes) {
              p.layers.emplace_back(first, first + size - 1);
              first += size;
            }
            if (!recompute) {
              try_partition(profile, cluster, p, best);
              continue;
            }
            try_recomputation(profile, cluster, p, best);
            p.zero = true;
            try_recomputation(profile, cluster, p, best);
          }
  }
  return best;
}

// The search without recomputation and ZeRO-1, as exhaustive() enumerates it (the recomputation test
// case enumerates those too).
JointOptions without_recomputation() {
  JointOptions options;
  options.recompute = false;
  options.search_zero = false;
  return options;
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
      JointOptions options = without_recomputation();
      const JointResult joint = plan_joint(profile, cluster, global_batch, options);
      REQUIRE(joint.found == std::isfinite(expected.step_ms));
      if (!joint.found) continue;
      CHECK(joint.evaluation.simulation.step_ms == Approx(expected.step_ms).epsilon(1e-12));
      CHECK(joint.evaluated <= expected.evaluated);
      const PartitionEvaluation again = evaluate_partition(profile, cluster, joint.partition);
      CHECK(again.fits);
      CHECK(again.peak_bytes <= cap);
      CHECK(again.simulation.step_ms == joint.evaluation.simulation.step_ms);
      // Under a time limit, with a first pass of 3 nodes per combination (so the second pass
      // searches nearly all of them again, whole): still the exhaustive optimum, and exact.
      options.time_limit_s = 3600;
      options.first_pass_nodes = 3;
      const JointResult two_passes = plan_joint(profile, cluster, global_batch, options);
      CHECK(two_passes.search == "exact");
      REQUIRE(two_passes.found);
      CHECK(two_passes.evaluation.simulation.step_ms == Approx(expected.step_ms).epsilon(1e-12));
    }
  }
}

// Issue 45: the bounds that prune (the single-chunk suffix bound, the devices' time, a multi-chunk
// kind's second half) hold for each (kind, M) alone, not only where another combination's plan
// hides a wrong prune: the search restricted to one kind and one M, with no seeds, finds that
// combination's exhaustive optimum, on caps from loose to binding.
TEST_CASE("joint: each kind and micro-batch count alone equals its exhaustive optimum") {
  std::mt19937 rng(45);
  const int shapes[][2] = {{1, 3}, {2, 2}, {1, 4}, {1, 2}};
  for (int trial = 0; trial < 4; ++trial) {
    const int layers = 5 + trial % 2;
    const Profile profile = random_profile(rng, layers);
    const double weights = profile.parameter_bytes(0, layers - 1) * 4;
    for (const double cap : {1e12, weights / 3}) {
      const Cluster cluster = make_cluster(shapes[trial][0], shapes[trial][1], 10e9, 1e9, cap);
      const int global_batch = 8;
      const Exhaustive expected = exhaustive(profile, cluster, global_batch);
      for (const auto kind : joint_kinds())
        for (const int m : {1, 2, 4, 8}) {
          CAPTURE(trial, cap, loom::schedule::schedule_kind_name(kind), m);
          JointOptions options = without_recomputation();
          options.seed = false;
          options.kinds = {kind};
          options.microbatch_counts = {m};
          const JointResult joint = plan_joint(profile, cluster, global_batch, options);
          const auto it = expected.by_kind_and_m.find({static_cast<int>(kind), m});
          REQUIRE(joint.found == (it != expected.by_kind_and_m.end()));
          if (joint.found) CHECK(joint.evaluation.simulation.step_ms == Approx(it->second).epsilon(1e-12));
        }
    }
  }
}

// Issue 29: recomputation searched per stage against every subset of every stage's layers (and
// ZeRO-1 on or off), on caps from loose to where only recomputation fits; one-chunk and
// multi-chunk kinds (looped, V).
TEST_CASE("joint: with recomputation the optimum equals exhaustive enumeration of every recomputed subset") {
  std::mt19937 rng(31);
  const std::vector<loom::schedule::ScheduleKind> kinds = {
      loom::schedule::ScheduleKind::gpipe, loom::schedule::ScheduleKind::dapple, loom::schedule::ScheduleKind::zb_h1,
      loom::schedule::ScheduleKind::interleaved, loom::schedule::ScheduleKind::zb_v};
  const int shapes[][2] = {{1, 1}, {1, 2}, {1, 3}};
  int recomputing = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const int layers = 4 + trial % 2;
    Profile profile = random_profile(rng, layers);
    // A tie between the first and the last layer, as a word embedding and its output projection.
    if (trial % 2 == 1) profile.ties.push_back({0, layers - 1, profile.layers[0].parameter_bytes / 2});
    const int* shape = shapes[trial % 3];
    const int global_batch = 4;
    JointOptions none;
    none.kinds = kinds;
    none.recompute = false;
    none.search_zero = false;
    none.seed = false;
    const JointResult loose = plan_joint(profile, make_cluster(shape[0], shape[1], 10e9, 1e9, 1e12), global_batch, none);
    REQUIRE(loose.found);
    // From the loose plan's peak down to where nothing fits even recomputing.
    for (const double fraction : {1.0, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.3}) {
      const double cap = loose.evaluation.peak_bytes * fraction;
      const Cluster cluster = make_cluster(shape[0], shape[1], 10e9, 1e9, cap);
      CAPTURE(trial, layers, shape[1], fraction, cap);
      const Exhaustive expected = exhaustive(profile, cluster, global_batch, kinds, true);
      JointOptions options = none;
      options.recompute = true;
      options.search_zero = true;
      const JointResult joint = plan_joint(profile, cluster, global_batch, options);
      REQUIRE(joint.found == std::isfinite(expected.step_ms));
      if (!joint.found) continue;
      CHECK(joint.evaluation.simulation.step_ms == Approx(expected.step_ms).epsilon(1e-12));
      const PartitionEvaluation again = evaluate_partition(profile, cluster, joint.partition);
      CHECK(again.fits);
      CHECK(again.peak_bytes <= cap);
      CHECK(again.simulation.step_ms == joint.evaluation.simulation.step_ms);
      for (const auto& blocks : joint.partition.recompute) recomputing += blocks.empty() ? 0 : 1;
    }
  }
  CHECK(recomputing > 0);  // some plan needed it
}

// A stage whose first layer is slow with small activations and whose second is fast with large
// ones: under a cap that drops the second layer's, the best set is {1} (keeping layer 0's small
// output as the run's input), not the prefix {0, 1} and its 5 ms more per micro-batch.
TEST_CASE("joint: recomputation chooses a subset that is not a prefix when that is fastest") {
  const Profile profile = make_profile({{5, 10, 1e5, 1e4, 1e3}, {0.1, 0.2, 4e6, 1e4, 1e3},
                                        {5, 10, 1e5, 1e4, 1e3}, {0.1, 0.2, 4e6, 1e4, 1e3}});
  JointOptions options;
  options.kinds = {loom::schedule::ScheduleKind::dapple};
  options.microbatch_counts = {4};
  options.seed = false;
  options.recompute = false;
  const JointResult loose = plan_joint(profile, make_cluster(1, 2, 10e9, 1e9, 1e12), 4, options);
  REQUIRE(loose.found);
  REQUIRE(loose.partition.layers.size() == 2);
  const Cluster cluster = make_cluster(1, 2, 10e9, 1e9, loose.evaluation.peak_bytes * 0.6);
  const Exhaustive expected = exhaustive(profile, cluster, 4, options.kinds, true);
  options.recompute = true;
  const JointResult joint = plan_joint(profile, cluster, 4, options);
  REQUIRE(joint.found);
  CHECK(joint.evaluation.simulation.step_ms == Approx(expected.step_ms).epsilon(1e-12));
  CHECK(joint.partition.recompute.at(0) == std::vector<int>{1});
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

// One layer of 1 MB of parameters cannot be cut: on four devices its four replicas hold 5 MB each under Adam
// (with the gradient buckets) and the allreduce's window of 1 MiB; under ZeRO-1 3.5 MB (each keeps a
// quarter of the 2 MB of state), the reduce-scatter's window of 1 MiB and, after the step, the parameter
// all-gather's window of 1 MB.
TEST_CASE("joint: ZeRO-1 divides the optimizer state over a stage's replicas") {
  const Profile profile = make_profile({{1, 2, 1e3, 0, 1e6}});
  const Cluster cluster = make_cluster(1, 4, 10e9, 1e9, 5.8e6);
  JointOptions options;
  options.search_zero = false;
  options.seed = false;  // the search's own plans use every device
  CHECK_FALSE(plan_joint(profile, cluster, 4, options).found);
  // The DAPPLE planner's seed fits: one replica on one device, no buckets (4 MB).
  options.seed = true;
  const JointResult seeded = plan_joint(profile, cluster, 4, options);
  REQUIRE(seeded.found);
  CHECK(seeded.seeded_from == "dapple");
  CHECK(seeded.evaluation.stages[0].devices.size() == 1);
  options.seed = false;
  options.cost.zero = true;  // loom plan --zero 1
  const JointResult zero = plan_joint(profile, cluster, 4, options);
  REQUIRE(zero.found);
  CHECK(zero.partition.replicas == std::vector<int>{4});
  CHECK(zero.evaluation.stages[0].static_bytes == Approx(3.5e6 + (1 << 20)));
  CHECK(zero.evaluation.stages[0].peak_bytes == Approx(4.5e6 + (1 << 20)));
  // The search turns it on by itself where nothing fits without it.
  const JointResult searched = plan_joint(profile, cluster, 4);
  REQUIRE(searched.found);
  CHECK(searched.partition.zero);
  CHECK(searched.evaluation.simulation.step_ms == zero.evaluation.simulation.step_ms);
  CHECK_FALSE(plan_joint(profile, make_cluster(1, 4, 10e9, 1e9, 1e12), 4).partition.zero);  // not needed: off
}

// Joint ⊇ the other planners (issue 45): on small random profiles and clusters, under both allreduce
// assumptions, the joint plan scores no more under the one model than any plan the DAPPLE, PipeDream,
// DP and GPipe planners return that fits.
TEST_CASE("joint: never slower under the one model than any other planner's plan") {
  std::mt19937 rng(45);
  int compared = 0, beaten = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const Profile profile = random_profile(rng, 2 + static_cast<int>(rng() % 5));
    const int nodes = 1 + static_cast<int>(rng() % 2), per_node = 1 + static_cast<int>(rng() % 2);
    std::uniform_real_distribution<double> inter(0.3e9, 5e9), memory_scale(0.5, 4.0);
    const Cluster cluster = make_cluster(nodes, per_node, 20e9, inter(rng),
                                         profile.total_parameter_bytes() * 4 * memory_scale(rng) + 2e7);
    const int global_batch = 4 << (rng() % 2);
    const bool overlap = rng() % 2 == 1;
    INFO("trial " << trial << ": " << profile.size() << " layers, " << nodes << "x" << per_node << ", batch "
                  << global_batch << (overlap ? ", overlapped" : ""));
    PlannerOptions options;
    options.cost.overlap_allreduce = overlap;
    options.simulate_candidates = 50;
    const PlannerResult others[] = {plan_dapple(profile, cluster, global_batch, options),
                                    plan_pipedream(profile, cluster, global_batch, options),
                                    plan_data_parallel(profile, cluster, global_batch, overlap, options),
                                    plan_gpipe(profile, cluster, global_batch, options)};
    JointOptions joint;
    joint.cost.overlap_allreduce = overlap;
    const JointResult j = plan_joint(profile, cluster, global_batch, joint);
    for (const PlannerResult& other : others) {
      if (!other.found) continue;
      INFO(other.plan.planner << " " << other.plan.strategy() << " M=" << other.plan.microbatches);
      REQUIRE(j.found);
      CHECK(j.evaluation.simulation.step_ms <= other.plan.predicted_step_ms * (1 + 1e-9));
      ++compared;
      if (j.evaluation.simulation.step_ms < other.plan.predicted_step_ms * (1 - 1e-6)) ++beaten;
    }
  }
  CHECK(compared > 60);
  CHECK(beaten > 10);  // the search finds better plans, not only the seeds again
}

// A stopped search's proved bound (JointResult::lower_bound_ms): never above the optimum the whole
// search finds, never above its own plan; each combination's bound never above its plans.
TEST_CASE("joint: a stopped search's lower bound holds") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 6; ++trial) {
    const Profile profile = random_profile(rng, 6);
    const Cluster cluster = make_cluster(1, 4, 20e9, 2e9, 1e12);
    JointOptions exact;
    exact.seed = false;
    const JointResult whole = plan_joint(profile, cluster, 8, exact);
    REQUIRE(whole.found);
    CHECK(whole.lower_bound_ms == whole.evaluation.simulation.step_ms);
    JointOptions stopped = exact;
    stopped.time_limit_s = 1e-6;
    stopped.first_pass_nodes = 1;
    const JointResult part = plan_joint(profile, cluster, 8, stopped);
    INFO("trial " << trial << ": " << part.search);
    CHECK(part.lower_bound_ms <= whole.evaluation.simulation.step_ms * (1 + 1e-9));
    if (part.found) CHECK(part.lower_bound_ms <= part.evaluation.simulation.step_ms);
    for (const int stages : {1, 2, 4})
      for (const int m : {1, 2, 4, 8}) {
        JointOptions one = exact;
        one.kinds = {ScheduleKind::dapple};
        one.microbatch_counts = {m};
        const double bound = combination_bound_ms(profile, cluster, 8, m);
        const JointResult r = plan_joint(profile, cluster, 8, one);
        // The best over every S at this M bounds from above the least of the S's bounds.
        if (r.found && stages == r.evaluation.schedule.stages) CHECK(bound <= r.evaluation.simulation.step_ms * (1 + 1e-9));
      }
  }
}
