// What every planner takes and returns. Each planner searches its own space of plans and scores
// the candidates with the one cost model (cost_model.h), so their step times compare directly.
#pragma once

#include <string>
#include <vector>

#include <loom/planner/cluster.h>
#include <loom/planner/cost_model.h>
#include <loom/planner/placement.h>
#include <loom/planner/plan.h>
#include <loom/planner/profile.h>

namespace loom::planner {

struct PlannerOptions {
  CostOptions cost;
  std::vector<int> microbatch_counts;     // candidates for M; empty: every divisor of the global batch
  std::vector<PlacementPolicy> policies;  // DAPPLE's placement policies to try; empty: all three
  // Plans allreduce each layer's gradients while the last backward runs (Plan::overlap_allreduce,
  // as loom's executor does with gradient buckets) instead of after it (DAPPLE's model).
  bool overlap_allreduce = false;
  // DAPPLE planner: when > 0, its best candidates by the cost model (up to this many distinct
  // plans from every stage of its search) are replayed in the schedule simulator, and the one
  // that simulates fastest is returned. 0: the cost model's optimum.
  int simulate_candidates = 0;
};

struct PlannerResult {
  bool found = false;  // false: no candidate fits in device memory (plan/cost hold the least bad one, if any)
  std::string note;
  Plan plan;
  PlanCost cost;
  double planning_ms = 0;
  long search_states = 0;  // size of the search, for the planning-time benchmark
};

// The candidates for M: options.microbatch_counts, or every divisor of global_batch.
std::vector<int> microbatch_candidates(int global_batch, const PlannerOptions& options);

// Of several scored plans of one strategy (different M), the fastest feasible one.
PlannerResult best_of(const Profile& profile, const Cluster& cluster, const std::vector<Plan>& candidates,
                      const CostOptions& options);

}  // namespace loom::planner
