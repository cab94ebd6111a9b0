// What every planner takes and returns. Each planner searches its own space of plans and scores
// the candidates with the one cost model (cost_model.h), so their step times compare directly.
#pragma once

#include <functional>
#include <string>
#include <string_view>
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
  // Bounded planning (docs/planner.md). The DAPPLE search stops when this many seconds have passed
  // (0: no limit) and returns the best plan found by then, marked "time-limited"; it also stops,
  // marked "size-limited", when one search would hold more than kMaxSearchBytes.
  double time_limit_s = 0;
  // Chains longer than this are coarsened (coarsen.h) before the exact searches; 0: each planner's
  // default (kDappleExactLayers, or PipeDream's from its O(n^3·m^2) work).
  int max_exact_layers = 0;
  // Called now and then with what the planner is doing ("dapple: exact search, M = 16 (3/9)").
  std::function<void(const std::string&)> progress;
};

constexpr int kDappleExactLayers = 256;
constexpr double kMaxSearchBytes = 1e9;

struct PlannerResult {
  bool found = false;  // false: no candidate fits in device memory (plan/cost hold the least bad one, if any)
  std::string note;
  Plan plan;
  PlanCost cost;
  double planning_ms = 0;
  long search_states = 0;  // size of the search, for the planning-time benchmark
  // "exact": the search finished; "time-limited" / "size-limited": it was stopped, and the plan is
  // the best one found before that.
  std::string search = "exact";
  int coarsened_from = 0;  // > 0: planned on this chain coarsened to `coarsened_to` groups
  int coarsened_to = 0;
};

using PlannerFunction = PlannerResult (*)(const Profile&, const Cluster&, int, const PlannerOptions&);

// Runs `plan` on `profile` coarsened to `groups` layers and returns its plan as a plan of the
// original chain, scored on it, with coarsened_from/to and the note saying so.
PlannerResult plan_coarsened(const Profile& profile, int groups, const Cluster& cluster, int global_batch,
                             const PlannerOptions& options, PlannerFunction plan);

// The candidates for M, ascending: options.microbatch_counts, or every divisor of global_batch up
// to what a schedule on `devices` devices may have (schedule::kMaxMicrobatches, and
// schedule::kMaxScheduleCells over the devices, as a plan has at most one stage per device).
std::vector<int> microbatch_candidates(int global_batch, const PlannerOptions& options, int devices = 1);

// Of several scored plans of one strategy (different M), the fastest feasible one; with no candidate
// at all, a result whose note is `none` (why there are none).
PlannerResult best_of(const Profile& profile, const Cluster& cluster, const std::vector<Plan>& candidates,
                      const CostOptions& options, std::string_view none = "no candidate");

// A candidate's header: the profile's model, the planner's name, the batch, M, the schedule kind and
// whether gradient allreduces overlap the backward; the caller adds the stages.
Plan candidate_plan(const Profile& profile, std::string planner, int global_batch, int microbatches,
                    schedule::ScheduleKind kind, bool overlap_allreduce);

}  // namespace loom::planner
