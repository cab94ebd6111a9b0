// The one model (see plan_score.h).
#include <loom/planner/plan_score.h>

#include <tuple>

namespace loom::planner {

Partition plan_partition(const Plan& plan) {
  Partition p;
  p.kind = plan.schedule;
  p.chunks = plan.chunks;
  p.microbatches = plan.microbatches;
  p.global_batch = plan.global_batch;
  p.layers = virtual_stage_layers(plan, plan_schedule(plan));
  bool recomputes = false;
  for (const StagePlan& stage : plan.stages) {
    p.replicas.push_back(stage.replicas());
    p.devices.push_back(stage.devices);
    p.recompute.push_back(stage.recompute);
    recomputes = recomputes || !stage.recompute.empty();
  }
  if (!recomputes) p.recompute.clear();
  p.zero = plan.zero == 1;
  p.overlap_allreduce = plan.overlap_allreduce;
  return p;
}

PartitionEvaluation score_plan(const Profile& profile, const Cluster& cluster, const Plan& plan,
                               const CostOptions& options) {
  CostOptions own = options;
  own.overlap_allreduce = plan.overlap_allreduce;  // the plan's own assumption (dp and dp-overlap differ in it)
  return evaluate_partition(profile, cluster, plan_partition(plan), own);
}

double single_device_step_ms(const Profile& profile, const Cluster& cluster, int global_batch,
                             const CostOptions& options) {
  Plan plan;
  plan.global_batch = global_batch;
  plan.stages = {{0, profile.size() - 1, {0}}};
  return score_plan(profile, cluster, plan, options).simulation.step_ms;
}

void record_score(Plan& plan, const PartitionEvaluation& score) {
  plan.predicted_step_ms = score.simulation.step_ms;
  plan.peak_memory_bytes = score.peak_bytes;
  for (std::size_t s = 0; s < plan.stages.size() && s < score.stages.size(); ++s)
    plan.stages[s].predicted_peak_bytes = score.stages[s].peak_bytes;
}

Plan partition_plan(const Partition& p, const PartitionEvaluation& score, std::string model, std::string planner) {
  const schedule::Schedule& sched = score.schedule;
  Plan plan;
  plan.model = std::move(model);
  plan.planner = std::move(planner);
  plan.global_batch = p.global_batch;
  plan.microbatches = p.microbatches;
  plan.schedule = p.kind;
  plan.chunks = p.chunks;
  plan.zero = p.zero ? 1 : 0;
  plan.overlap_allreduce = p.overlap_allreduce;
  for (int s = 0; s < sched.stages; ++s) {
    StagePlan stage;
    std::tie(stage.first_layer, stage.last_layer) = p.layers[static_cast<std::size_t>(sched.virtual_stage(s, 0))];
    for (int c = 1; c < sched.chunks; ++c)
      stage.later_chunks.push_back(p.layers[static_cast<std::size_t>(sched.virtual_stage(s, c))]);
    stage.devices = score.stages[static_cast<std::size_t>(s)].devices;
    if (!p.recompute.empty()) stage.recompute = p.recompute[static_cast<std::size_t>(s)];
    plan.stages.push_back(std::move(stage));
  }
  record_score(plan, score);
  return plan;
}

}  // namespace loom::planner
