// Shared planner helpers: micro-batch candidates and picking the best scored variant.
#include <loom/planner/planner.h>

#include <algorithm>
#include <cstdint>

#include <loom/planner/coarsen.h>
#include <loom/planner/plan_score.h>
#include <loom/schedule/validator.h>

#include <loom/base/error.h>

namespace loom::planner {

std::vector<int> microbatch_candidates(int global_batch, const PlannerOptions& options, int devices) {
  if (global_batch < 1) LOOM_THROW("the global batch must be at least 1, got ", global_batch);
  // A plan has at most `devices` stages, and its schedule at most kMaxScheduleCells cells.
  const int most = static_cast<int>(std::min<long long>(schedule::kMaxMicrobatches,
                                                        schedule::kMaxScheduleCells / std::max(1, devices)));
  std::vector<int> out;
  if (!options.microbatch_counts.empty()) {
    for (int m : options.microbatch_counts) {
      if (m > most)
        LOOM_THROW("micro-batch count ", m, " is more than the ", most, " a schedule on ", devices,
                     " devices may have");
      if (m >= 1 && global_batch % m == 0) out.push_back(m);
    }
    if (out.empty()) LOOM_THROW("none of the given micro-batch counts divides the global batch ", global_batch);
    return out;
  }
  // Divisors in pairs (m, global_batch / m) up to the square root, in 64 bits: a loop up to the
  // global batch itself would take 2^31 steps and overflow at INT_MAX.
  std::vector<int> above;
  const std::int64_t batch = global_batch;
  for (std::int64_t m = 1; m * m <= batch; ++m) {
    if (batch % m != 0) continue;
    out.push_back(static_cast<int>(m));
    if (m * m != batch) above.push_back(static_cast<int>(batch / m));
  }
  out.insert(out.end(), above.rbegin(), above.rend());
  while (out.size() > 1 && out.back() > most) out.pop_back();
  return out;
}

void keep_scored(PlannerResult& result, Plan plan, PartitionEvaluation score) {
  result.found = score.fits;
  record_score(plan, score);
  result.plan = std::move(plan);
  result.score = std::move(score);
}

bool better_score(const PartitionEvaluation& score, const PlannerResult& result) {
  return result.plan.stages.empty() || (score.fits && !result.found) ||
         (score.fits == result.found && score.simulation.step_ms < result.score.simulation.step_ms);
}

PlannerResult best_of(const Profile& profile, const Cluster& cluster, const std::vector<Plan>& candidates,
                      const CostOptions& options, std::string_view none) {
  PlannerResult best;
  double objective_ms = -1;
  for (const Plan& candidate : candidates) {
    const PlanCost objective = evaluate(profile, cluster, candidate, options);
    if (objective.feasible && (objective_ms < 0 || objective.step_ms < objective_ms)) objective_ms = objective.step_ms;
    PartitionEvaluation score = score_plan(profile, cluster, candidate, options);
    if (better_score(score, best)) keep_scored(best, candidate, std::move(score));
  }
  best.objective_ms = objective_ms;
  if (!best.found) best.note = best.plan.stages.empty() ? std::string(none) : "does not fit: " + best.score.why_not;
  return best;
}

Plan candidate_plan(const Profile& profile, std::string planner, int global_batch, int microbatches,
                    schedule::ScheduleKind kind, bool overlap_allreduce) {
  Plan plan;
  plan.model = profile.model;
  plan.planner = std::move(planner);
  plan.global_batch = global_batch;
  plan.microbatches = microbatches;
  plan.schedule = kind;
  plan.overlap_allreduce = overlap_allreduce;
  return plan;
}

PlannerResult plan_coarsened(const Profile& profile, int groups, const Cluster& cluster, int global_batch,
                             const PlannerOptions& options, PlannerFunction plan) {
  const Coarsening coarse = coarsen(profile, groups);
  PlannerResult result = plan(coarse.profile, cluster, global_batch, options);
  result.coarsened_from = profile.size();
  result.coarsened_to = coarse.profile.size();
  const std::string what = loom::detail::concat("planned on ", result.coarsened_to, " groups of the ",
                                                profile.size(), " layers (coarsened)");
  result.note = result.note.empty() ? what : what + "; " + result.note;
  if (result.plan.stages.empty()) return result;
  Plan refined = refine(result.plan, coarse);
  result.objective_ms = evaluate(profile, cluster, refined, options.cost).step_ms;
  PartitionEvaluation score = score_plan(profile, cluster, refined, options.cost);
  keep_scored(result, std::move(refined), std::move(score));
  return result;
}

}  // namespace loom::planner
