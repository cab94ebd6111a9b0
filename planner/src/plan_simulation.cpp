// Plan → schedule + simulator costs, reusing the cost model's per-stage numbers.
#include <loom/planner/plan_simulation.h>

#include <limits>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>

namespace loom::planner {

schedule::CostModel simulation_costs(const Profile& profile, const Cluster& cluster, const Plan& plan,
                                     const CostOptions& options) {
  const PlanCost cost = evaluate(profile, cluster, plan, options);
  const int b = plan.microbatch_size();
  schedule::CostModel model;
  for (int s = 0; s < plan.stage_count(); ++s) {
    const StagePlan& stage = plan.stages[s];
    const StageEstimate& sc = cost.stages[s];
    schedule::StageCost out;
    out.forward_ms = sc.forward_ms;
    out.backward_ms = sc.backward_ms;
    out.allreduce_ms = sc.allreduce_ms;
    const double rows = static_cast<double>((static_cast<long long>(b) + stage.replicas() - 1) / stage.replicas());
    for (int l = stage.first_layer; l <= stage.last_layer; ++l) out.activation_bytes += profile.cost_at(l, rows).activation_bytes;
    if (stage.first_layer > 0) out.activation_bytes += profile.cost_at(stage.first_layer - 1, rows).boundary_bytes;
    model.stages.push_back(out);
    if (s + 1 < plan.stage_count()) {
      const double bytes = profile.cost_at(stage.last_layer, b).boundary_bytes;
      model.stages.back().boundary_bytes = bytes;
      const LinearCost link = transfer_cost(cluster, stage.devices, plan.stages[s + 1].devices, b);
      schedule::Link l;
      // The cost model's bytes · ms_per_byte + latency, as a bandwidth in bytes/s.
      l.bandwidth_bytes_per_s =
          link.ms_per_byte > 0 ? 1e3 / link.ms_per_byte : std::numeric_limits<double>::infinity();
      l.latency_ms = bytes > 0 ? link.latency_ms : 0;
      model.links.push_back(l);
    }
  }
  return model;
}

schedule::SimulationResult simulate_plan(const Profile& profile, const Cluster& cluster, const Plan& plan,
                                         const CostOptions& options) {
  LOOM_CHECK(plan.chunks == 1, "simulate_plan: a plan of ", plan.chunks,
             " chunks per stage is simulated by evaluate_partition (partition_evaluation.h)");
  return schedule::simulate(plan_schedule(plan), simulation_costs(profile, cluster, plan, options));
}

}  // namespace loom::planner
