// Brute-force references for the planner tests: enumerate every plan of a small instance and
// score it with the cost model, independently of the planners' dynamic programmes.
#pragma once

#include <functional>
#include <limits>
#include <vector>

#include <loom/planner/cost_model.h>
#include <loom/planner/placement.h>

namespace loom::planner::test {

// Calls visit(last_layers) for every split of layers 0..n-1 into consecutive stages.
inline void for_each_split(int n, const std::function<void(const std::vector<int>&)>& visit) {
  for (unsigned mask = 0; mask < (1u << (n - 1)); ++mask) {
    std::vector<int> last;
    for (int l = 0; l + 1 < n; ++l)
      if (mask & (1u << l)) last.push_back(l);
    last.push_back(n - 1);
    visit(last);
  }
}

// Calls visit(replicas) for every replica vector of `stages` entries, each in 1..cap, summing to
// at most `devices`.
inline void for_each_replication(int stages, int devices, int cap,
                                 const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> r(stages, 1);
  std::function<void(int, int)> rec = [&](int s, int left) {
    if (s == stages) {
      visit(r);
      return;
    }
    for (int k = 1; k <= std::min(cap, left - (stages - s - 1)); ++k) {
      r[s] = k;
      rec(s + 1, left - k);
    }
  };
  rec(0, devices);
}

// The best feasible DAPPLE step time over every M, split, replication and placement policy.
inline double brute_force_dapple(const Profile& profile, const Cluster& cluster, int global_batch,
                                 bool overlap = false, const CostOptions& options = {}) {
  double best = std::numeric_limits<double>::infinity();
  for (int m = 1; m <= global_batch; ++m) {
    if (global_batch % m) continue;
    const int b = global_batch / m;
    for_each_split(profile.size(), [&](const std::vector<int>& last) {
      const int stages = static_cast<int>(last.size());
      if (stages > cluster.devices()) return;
      for_each_replication(stages, cluster.devices(), b, [&](const std::vector<int>& replicas) {
        for (PlacementPolicy policy : kAllPlacementPolicies) {
          const auto devices = place_stages(cluster.nodes, cluster.devices_per_node, replicas, policy);
          Plan plan;
          plan.global_batch = global_batch;
          plan.microbatches = m;
          plan.overlap_allreduce = overlap;
          int first = 0;
          for (int s = 0; s < stages; ++s) {
            plan.stages.push_back({first, last[s], devices[s]});
            first = last[s] + 1;
          }
          const PlanCost cost = evaluate(profile, cluster, plan, options);
          if (cost.feasible) best = std::min(best, cost.step_ms);
        }
      });
    });
  }
  return best;
}

}  // namespace loom::planner::test
