// What every planner takes and returns. Each planner searches its own space of plans (the DAPPLE
// and PipeDream searches by the closed form of cost_model.h, their papers' objective); every plan
// it returns is scored by the one model (plan_score.h), so all planners' numbers compare directly.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <loom/planner/cluster.h>
#include <loom/planner/cost_model.h>
#include <loom/planner/partition_evaluation.h>
#include <loom/planner/placement.h>
#include <loom/planner/plan.h>
#include <loom/planner/profile.h>

namespace loom::planner {

struct PlannerOptions {
  CostOptions cost;
  std::vector<int> microbatch_counts;     // candidates for M; empty: every divisor of the global batch
  std::vector<PlacementPolicy> policies;  // DAPPLE's placement policies to try; empty: all three
  // (cost.overlap_allreduce: the plans allreduce each layer's gradients while the last backward
  // runs, Plan::overlap_allreduce, instead of after it, DAPPLE's model.)
  // DAPPLE planner: when > 0, its best candidates by its objective (up to this many distinct plans
  // from every stage of its search) are scored by the one model, and the fastest that fits is
  // returned. 0: its objective's optimum.
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
  // false: no candidate fits in device memory under the one model (plan/score hold the least bad
  // one, if any).
  bool found = false;
  std::string note;
  Plan plan;  // predicted_step_ms, peak_memory_bytes and each stage's predicted_peak_bytes: the one model's
  PartitionEvaluation score;  // the one model's evaluation of `plan` (plan_score.h)
  // The best value of the planner's own objective (cost_model.h's closed form, the papers' model) over
  // the plans it considered that fit by it: the DAPPLE search's optimum, the baselines' best M. The
  // returned plan, the fastest under the one model, may score more by it. < 0: none.
  double objective_ms = -1;
  double planning_ms = 0;
  long search_states = 0;  // size of the search, for the planning-time benchmark
  // "exact": the search finished; "time-limited" / "size-limited": it was stopped, and the plan is
  // the best one found before that.
  std::string search = "exact";
  double lower_bound_ms = -1;  // the joint search's proved bound (JointResult::lower_bound_ms); < 0: none
  int coarsened_from = 0;  // > 0: planned on this chain coarsened to `coarsened_to` groups
  int coarsened_to = 0;
};

using PlannerFunction = PlannerResult (*)(const Profile&, const Cluster&, int, const PlannerOptions&);

// Runs `plan` on `profile` coarsened to `groups` layers and returns its plan as a plan of the
// original chain, scored on it by the one model, with coarsened_from/to and the note saying so.
PlannerResult plan_coarsened(const Profile& profile, int groups, const Cluster& cluster, int global_batch,
                             const PlannerOptions& options, PlannerFunction plan);

// The candidates for M, ascending: options.microbatch_counts, or every divisor of global_batch up
// to what a schedule on `devices` devices may have (schedule::kMaxMicrobatches, and
// schedule::kMaxScheduleCells over the devices, as a plan has at most one stage per device).
std::vector<int> microbatch_candidates(int global_batch, const PlannerOptions& options, int devices = 1);

// Of several plans of one strategy (different M), the fastest that fits under the one model; with
// no candidate at all, a result whose note is `none` (why there are none).
PlannerResult best_of(const Profile& profile, const Cluster& cluster, const std::vector<Plan>& candidates,
                      const CostOptions& options, std::string_view none = "no candidate");

// `result` with `plan` as its plan and `score` (score_plan's) as its score: found when it fits, and
// the score's predictions recorded in the plan. The caller sets objective_ms.
void keep_scored(PlannerResult& result, Plan plan, PartitionEvaluation score);
// Whether `score` is better than `result`'s: `result` has no plan yet, or `score` fits where it does
// not, or both fit alike and `score` is faster.
bool better_score(const PartitionEvaluation& score, const PlannerResult& result);

// A candidate's header: the profile's model, the planner's name, the batch, M, the schedule kind and
// whether gradient allreduces overlap the backward; the caller adds the stages.
Plan candidate_plan(const Profile& profile, std::string planner, int global_batch, int microbatches,
                    schedule::ScheduleKind kind, bool overlap_allreduce);

}  // namespace loom::planner
