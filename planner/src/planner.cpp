// Shared planner helpers: micro-batch candidates and picking the best scored variant.
#include <loom/planner/planner.h>

#include "fail.h"

namespace loom::planner {

std::vector<int> microbatch_candidates(int global_batch, const PlannerOptions& options) {
  if (global_batch < 1) detail::fail("the global batch must be at least 1, got ", global_batch);
  std::vector<int> out;
  if (!options.microbatch_counts.empty()) {
    for (int m : options.microbatch_counts)
      if (m >= 1 && global_batch % m == 0) out.push_back(m);
    if (out.empty()) detail::fail("none of the given micro-batch counts divides the global batch ", global_batch);
    return out;
  }
  for (int m = 1; m <= global_batch; ++m)
    if (global_batch % m == 0) out.push_back(m);
  return out;
}

PlannerResult best_of(const Profile& profile, const Cluster& cluster, const std::vector<Plan>& candidates,
                      const CostOptions& options) {
  PlannerResult best;
  for (const Plan& candidate : candidates) {
    const PlanCost cost = evaluate(profile, cluster, candidate, options);
    const bool better = !best.plan.stages.size() || (cost.feasible && !best.found) ||
                        (cost.feasible == best.found && cost.step_ms < best.cost.step_ms);
    if (!better) continue;
    best.found = cost.feasible;
    best.plan = candidate;
    best.cost = cost;
  }
  best.plan.predicted_step_ms = best.cost.step_ms;
  best.plan.peak_memory_bytes = best.cost.peak_memory_bytes;
  if (!best.found) best.note = best.plan.stages.empty() ? "no candidate" : "does not fit: " + best.cost.infeasible_reason;
  return best;
}

}  // namespace loom::planner
