// Data-parallel and even-split GPipe baselines.
#include <loom/planner/baselines.h>

#include <chrono>
#include <numeric>

#include "balanced_split.h"

namespace loom::planner {

namespace {

double elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

PlannerResult plan_data_parallel(const Profile& profile, const Cluster& cluster, int global_batch, bool overlap,
                                 const PlannerOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  validate(profile);
  std::vector<int> all(cluster.devices());
  std::iota(all.begin(), all.end(), 0);
  std::vector<Plan> candidates;
  for (int m : microbatch_candidates(global_batch, options, cluster.devices())) {
    if (global_batch / m < cluster.devices()) continue;
    Plan plan = candidate_plan(profile, overlap ? "dp-overlap" : "dp", global_batch, m, ScheduleKind::dapple, overlap);
    plan.stages = {{0, profile.size() - 1, all}};
    candidates.push_back(std::move(plan));
  }
  PlannerResult result =
      best_of(profile, cluster, candidates, options.cost, "the global batch is smaller than the number of devices");
  result.planning_ms = elapsed_ms(start);
  return result;
}

PlannerResult plan_gpipe(const Profile& profile, const Cluster& cluster, int global_batch,
                         const PlannerOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  validate(profile);
  // The even split is a dynamic programme of O(stages · layers^2): split groups of a long chain.
  const int exact_layers = options.max_exact_layers > 0 ? options.max_exact_layers : kDappleExactLayers;
  if (profile.size() > exact_layers)
    return plan_coarsened(profile, exact_layers, cluster, global_batch, options, plan_gpipe);
  const int devices = cluster.devices();
  std::vector<double> work(profile.size());
  for (int l = 0; l < profile.size(); ++l) work[l] = profile.layers[l].cost.forward_ms + profile.layers[l].cost.backward_ms;
  std::vector<Plan> candidates;
  for (int stages = 1; stages <= std::min(devices, profile.size()); ++stages) {
    if (devices % stages != 0 || (stages == 1 && std::min(devices, profile.size()) > 1)) continue;
    const int replicas = devices / stages;
    const std::vector<int> last = detail::balanced_split(work, stages);
    for (int m : microbatch_candidates(global_batch, options, cluster.devices())) {
      if (global_batch / m < replicas) continue;
      Plan plan = candidate_plan(profile, "gpipe", global_batch, m, ScheduleKind::gpipe, options.cost.overlap_allreduce);
      for (int s = 0, first = 0; s < stages; first = last[s] + 1, ++s) {
        StagePlan stage{first, last[s], std::vector<int>(replicas)};
        std::iota(stage.devices.begin(), stage.devices.end(), s * replicas);
        plan.stages.push_back(std::move(stage));
      }
      candidates.push_back(std::move(plan));
    }
  }
  PlannerResult result = best_of(profile, cluster, candidates, options.cost,
                                 "the global batch is smaller than the number of replicas of every split");
  result.planning_ms = elapsed_ms(start);
  return result;
}

}  // namespace loom::planner
