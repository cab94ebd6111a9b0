// The joint search over partition, replicas, schedule kind and M (see joint_planner.h).
#include <loom/planner/joint_planner.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include <loom/core/error.h>
#include <loom/planner/baselines.h>
#include <loom/planner/dapple_planner.h>
#include <loom/planner/planner.h>
#include <loom/planner/recomputation.h>
#include <loom/schedule/generators.h>

namespace loom::planner {

namespace {

using Clock = std::chrono::steady_clock;

// A candidate that fits and is faster than the best so far becomes the best (`from`: the seed's
// planner, empty for the search's own).
void keep(JointResult& best, double& best_ms, Partition partition, PartitionEvaluation e, const std::string& from) {
  best_ms = e.simulation.step_ms;
  best.found = true;
  best.partition = std::move(partition);
  best.evaluation = std::move(e);
  best.seeded_from = from;
}

// One (kind, replicas, M): the cuts of the chain into its S·v virtual stages, depth first.
struct CutSearch {
  const Profile& profile;
  const Cluster& cluster;
  const JointOptions& options;
  const schedule::Schedule& sched;
  Partition partition;
  std::vector<int> rows;          // per pipeline stage: rows of a micro-batch per replica
  std::vector<LinearCost> allreduce;  // per pipeline stage: its gradient allreduce among its replicas
  std::vector<double> busy_ms;    // per pipeline stage: M · Σ (F + B) + AR of the chunks cut so far
  std::vector<double> static_bytes;
  std::vector<double> rest_ms;    // per layer l: M · Σ (F + B) of layers l.. at the fewest rows of any stage
  JointResult& best;
  double& closest_excess;  // bytes over the cap of the closest candidate that did not fit
  double best_ms;
  Clock::time_point deadline;
  bool stopped = false;
  // The most the profile's ties can take off a stage's static bytes (shared_tie_bytes): the
  // static-bytes bound subtracts it, since a later chunk may bring a tie's other layer.
  double tie_slack = 0;
  CostOptions bound_cost;  // options.cost, with ZeRO-1 when the search may turn it on (the least bytes)

  void evaluate() {
    if (options.time_limit_s > 0 && Clock::now() > deadline) {
      stopped = true;
      return;
    }
    ++best.evaluated;
    PartitionEvaluation e;
    try {
      e = evaluate_partition(profile, cluster, partition, options.cost);
    } catch (const loom::Error&) {
      return;  // sizes the kind refuses
    }
    if (!e.fits && e.peak_bytes - cluster.device_memory < closest_excess) {
      closest_excess = e.peak_bytes - cluster.device_memory;
      best.why_none = "closest: schedule " + std::string(schedule::schedule_kind_name(partition.kind)) + ", M=" +
                      std::to_string(partition.microbatches) + ", " + e.why_not;
    }
    if (e.simulation.step_ms >= best_ms) return;  // recomputation only adds time
    Partition fitted = partition;
    const bool replicated = std::any_of(partition.replicas.begin(), partition.replicas.end(), [](int r) { return r > 1; });
    if (!e.fits && options.search_zero && !options.cost.zero && replicated) {
      fitted.zero = true;  // the same step, less optimizer state per replica
      e = evaluate_partition(profile, cluster, fitted, options.cost);
    }
    std::string why;
    if (!e.fits && !(options.recompute && fit_by_recomputation(profile, cluster, fitted, e, options.cost, why))) return;
    if (e.simulation.step_ms >= best_ms) return;
    keep(best, best_ms, std::move(fitted), std::move(e), "");
  }

  // Every stage computes on one device, so the step lasts at least the average busy time.
  void bound_rest() {
    const int fewest = *std::min_element(rows.begin(), rows.end());
    rest_ms.assign(static_cast<std::size_t>(profile.size()) + 1, 0.0);
    for (int l = profile.size() - 1; l >= 0; --l) {
      const RangeCost work = range_cost(profile, l, l, fewest);
      rest_ms[static_cast<std::size_t>(l)] =
          rest_ms[static_cast<std::size_t>(l) + 1] + partition.microbatches * (work.forward_ms + work.backward_ms);
    }
  }

  double busy_total() const {
    double total = 0;
    for (double b : busy_ms) total += b;
    return total;
  }

  void cut(int virtual_stage, int first) {
    const int total = sched.virtual_stages();
    if (virtual_stage == total) return evaluate();
    const int stage = sched.stage_of(virtual_stage);
    const int last_end = profile.size() - (total - virtual_stage);
    const int last_begin = virtual_stage + 1 == total ? last_end : first;
    for (int last = last_begin; last <= last_end && !stopped; ++last) {
      const RangeCost work = range_cost(profile, first, last, rows[static_cast<std::size_t>(stage)]);
      const double weights = profile.parameter_bytes(first, last);
      // Overlapped, the allreduce may hide entirely: the bound counts none of it.
      const double busy = partition.microbatches * (work.forward_ms + work.backward_ms) +
                          (options.cost.overlap_allreduce ? 0.0 : allreduce[static_cast<std::size_t>(stage)].at(weights));
      const double bytes = state_bytes(weights, partition.replicas[static_cast<std::size_t>(stage)], bound_cost);
      double& stage_busy = busy_ms[static_cast<std::size_t>(stage)];
      double& stage_bytes = static_bytes[static_cast<std::size_t>(stage)];
      // Both grow with `last`: once over the bound, every longer range is too.
      // The layers after `last` still to come, at least as slow as at the fewest rows.
      const double average = (busy_total() + busy + rest_ms[static_cast<std::size_t>(last) + 1]) / sched.stages;
      const double bound = std::max(stage_busy + busy, average);
      if (options.prune && (bound > best_ms * (1 + 1e-9) || stage_bytes + bytes - tie_slack > cluster.device_memory))
        break;
      stage_busy += busy;
      stage_bytes += bytes;
      partition.layers[static_cast<std::size_t>(virtual_stage)] = {first, last};
      cut(virtual_stage + 1, last + 1);
      stage_busy -= busy;
      stage_bytes -= bytes;
    }
  }
};

// A planner's plan as the joint search's candidate, with its placement.
Partition as_partition(const Plan& plan) {
  Partition p{plan.schedule, 1, plan.microbatches, plan.global_batch, {}, {}};
  for (const StagePlan& stage : plan.stages) {
    p.layers.emplace_back(stage.first_layer, stage.last_layer);
    p.replicas.push_back(stage.replicas());
    p.devices.push_back(stage.devices);
  }
  return p;
}

// The seeds (JointOptions::seed): the DAPPLE planner's, the GPipe baseline's and data parallelism's
// plans (under the same allreduce assumption), simulated.
void seed(const Profile& profile, const Cluster& cluster, int global_batch, const JointOptions& options,
          JointResult& best, double& best_ms) {
  PlannerOptions planner;
  planner.cost = options.cost;
  planner.microbatch_counts = options.microbatch_counts;
  planner.time_limit_s = options.time_limit_s;
  planner.simulate_candidates = 50;  // as `loom plan` runs the DAPPLE planner by default
  const bool overlap = planner.overlap_allreduce = options.cost.overlap_allreduce;
  const std::pair<const char*, PlannerResult> results[] = {
      {"dapple", plan_dapple(profile, cluster, global_batch, planner)},
      {"gpipe", plan_gpipe(profile, cluster, global_batch, planner)},
      {overlap ? "dp-overlap" : "dp", plan_data_parallel(profile, cluster, global_batch, overlap, planner)}};
  for (const auto& [name, result] : results) {
    if (!result.found) continue;
    const Partition partition = as_partition(result.plan);
    ++best.evaluated;
    PartitionEvaluation e;
    try {
      e = evaluate_partition(profile, cluster, partition, options.cost);
    } catch (const loom::Error&) {
      continue;
    }
    if (!e.fits || e.simulation.step_ms >= best_ms) continue;
    keep(best, best_ms, partition, std::move(e), name);
  }
}

// Every way to give `stages` stages at least one replica each, `devices` in all.
void replica_vectors(int stages, int devices, std::vector<int>& current, std::vector<std::vector<int>>& out) {
  if (static_cast<int>(current.size()) + 1 == stages) {
    current.push_back(devices);
    out.push_back(current);
    current.pop_back();
    return;
  }
  for (int r = 1; r <= devices - (stages - static_cast<int>(current.size()) - 1); ++r) {
    current.push_back(r);
    replica_vectors(stages, devices - r, current, out);
    current.pop_back();
  }
}

}  // namespace

std::vector<schedule::ScheduleKind> joint_kinds() {
  std::vector<schedule::ScheduleKind> kinds;
  for (std::size_t i = 0; i < schedule::schedule_kinds().size(); ++i) {
    const auto kind = static_cast<schedule::ScheduleKind>(i);
    if (!schedule::is_asynchronous(kind)) kinds.push_back(kind);
  }
  return kinds;
}

int joint_chunks(schedule::ScheduleKind kind) { return schedule::is_multi_chunk(kind) ? 2 : 1; }

JointResult plan_joint(const Profile& profile, const Cluster& cluster, int global_batch, const JointOptions& options) {
  const int devices = cluster.devices();
  PlannerOptions counts;
  counts.microbatch_counts = options.microbatch_counts;
  // The most micro-batches first: their small bubbles make good plans early, which bound the rest.
  std::vector<int> microbatches = microbatch_candidates(global_batch, counts, devices);
  std::reverse(microbatches.begin(), microbatches.end());
  JointResult best;
  best.why_none = "every cut gives some stage more weights, gradients and optimizer state than a device holds";
  double best_ms = std::numeric_limits<double>::infinity();
  double closest_excess = std::numeric_limits<double>::infinity();
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.time_limit_s));
  if (options.seed) seed(profile, cluster, global_batch, options, best, best_ms);
  for (const schedule::ScheduleKind kind : options.kinds.empty() ? joint_kinds() : options.kinds) {
    const int v = joint_chunks(kind);
    for (int stages = 1; stages <= devices && stages * v <= profile.size(); ++stages) {
      std::vector<std::vector<int>> vectors;
      std::vector<int> current;
      replica_vectors(stages, devices, current, vectors);
      for (const std::vector<int>& replicas : vectors) {
        for (const int m : microbatches) {
          schedule::Schedule sched;
          try {
            sched = schedule::make_schedule(kind, {std::string(schedule::schedule_kind_name(kind)), stages, m, v, 3, {}});
          } catch (const loom::Error&) {
            continue;  // sizes the kind refuses
          }
          const int rows_per_microbatch = global_batch / m;
          CutSearch search{profile, cluster, options, sched, {}, {}, {}, std::vector<double>(stages, 0.0),
                           std::vector<double>(stages, 0.0), {}, best, closest_excess, best_ms,
                           deadline};
          bool too_many_replicas = false;
          int next_device = 0;  // placed as evaluate_partition() places them
          for (int r : replicas) {
            too_many_replicas = too_many_replicas || r > rows_per_microbatch;
            search.rows.push_back((rows_per_microbatch + r - 1) / r);
            std::vector<int> stage_devices(static_cast<std::size_t>(r));
            for (int& d : stage_devices) d = next_device++;
            search.allreduce.push_back(allreduce_cost(cluster, stage_devices));
          }
          if (too_many_replicas) continue;
          search.partition = {kind, v, m, global_batch, std::vector<std::pair<int, int>>(stages * v), replicas};
          for (const LayerTie& tie : profile.ties) search.tie_slack += tie.bytes * (1 + options.cost.optimizer_state_factor);
          search.bound_cost = options.cost;
          search.bound_cost.zero = options.cost.zero || options.search_zero;
          search.bound_rest();
          search.cut(0, 0);
          best_ms = search.best_ms;
          if (search.stopped) {
            best.search = "time-limited";
            if (best.found) best.why_none.clear();
            return best;
          }
        }
      }
    }
  }
  if (best.found) best.why_none.clear();
  return best;
}

}  // namespace loom::planner
