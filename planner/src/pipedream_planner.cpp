// PipeDream's hierarchical partitioning DP, and its strategy run as a synchronous plan.
#include <loom/planner/pipedream_planner.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <loom/base/error.h>

namespace loom::planner {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct LevelStage {
  int first, last, replicas;
};

// A(i..j, m) for every sub-chain and m = 1..units at one level of the topology.
class Level {
 public:
  // compute(i, j): time of layers i..j on one unit of this level; bandwidth in bytes/ms.
  template <typename Compute>
  Level(int layers, int units, double bandwidth, const std::vector<double>& params_prefix,
        const std::vector<double>& cut_bytes, Compute compute)
      : n_(layers), units_(units), bandwidth_(bandwidth), params_(params_prefix), cuts_(cut_bytes) {
    compute_.assign(n_ * n_, 0);
    for (int i = 0; i < n_; ++i)
      for (int j = i; j < n_; ++j) compute_[i * n_ + j] = compute(i, j);
    best_.assign(static_cast<std::size_t>(n_) * n_ * (units_ + 1), kInfinity);
    split_.assign(best_.size(), {-1, 0});
    for (int length = 1; length <= n_; ++length) {
      for (int i = 0; i + length <= n_; ++i) {
        const int j = i + length - 1;
        for (int m = 1; m <= units_; ++m) {
          double value = stage_time(i, j, m);
          std::pair<int, int> choice{-1, 0};
          for (int k = i; k < j; ++k) {
            const double link = 2 * cuts_[k] / bandwidth_;
            for (int last = 1; last < m; ++last) {
              const double v = std::max({at(i, k, m - last), link, stage_time(k + 1, j, last)});
              if (v < value) {
                value = v;
                choice = {k, last};
              }
            }
          }
          best_[index(i, j, m)] = value;
          split_[index(i, j, m)] = choice;
        }
      }
    }
  }

  double at(int i, int j, int m) const { return best_[index(i, j, m)]; }

  // The stages of the optimum of layers i..j on m units.
  void stages(int i, int j, int m, std::vector<LevelStage>& out) const {
    const auto [k, last] = split_[index(i, j, m)];
    if (k < 0) {
      out.push_back({i, j, m});
      return;
    }
    stages(i, k, m - last, out);
    out.push_back({k + 1, j, last});
  }

 private:
  std::size_t index(int i, int j, int m) const { return (static_cast<std::size_t>(i) * n_ + j) * (units_ + 1) + m; }

  double stage_time(int i, int j, int m) const {
    const double weights = params_[j + 1] - params_[i];
    const double sync = 4.0 * (m - 1) * weights / (bandwidth_ * m);
    return std::max(compute_[i * n_ + j], sync) / m;
  }

  int n_, units_;
  double bandwidth_;
  std::vector<double> params_, cuts_, compute_, best_;
  std::vector<std::pair<int, int>> split_;
};

}  // namespace

PipeDreamPartition pipedream_partition(const Profile& profile, const Cluster& cluster) {
  validate(profile);
  const int n = profile.size(), d = cluster.devices_per_node;
  std::vector<double> params(n + 1, 0), cuts(n), work_prefix(n + 1, 0);
  for (int l = 0; l < n; ++l) {
    params[l + 1] = params[l] + profile.layers[l].parameter_bytes;
    cuts[l] = profile.layers[l].cost.boundary_bytes;
    work_prefix[l + 1] = work_prefix[l] + profile.layers[l].cost.forward_ms + profile.layers[l].cost.backward_ms;
  }
  const double intra = cluster.intra_bandwidth / 1e3, inter = cluster.inter_bandwidth / 1e3;  // bytes per ms
  const Level devices(n, d, intra, params, cuts, [&](int i, int j) { return work_prefix[j + 1] - work_prefix[i]; });

  PipeDreamPartition out;
  std::vector<LevelStage> top;
  if (cluster.nodes == 1) {
    out.objective_ms = devices.at(0, n - 1, d);
    devices.stages(0, n - 1, d, top);
    int next = 0;
    for (const LevelStage& s : top) {
      StagePlan stage{s.first, s.last, {}};
      for (int q = 0; q < s.replicas; ++q) stage.devices.push_back(next++);
      out.stages.push_back(stage);
    }
    return out;
  }

  const Level nodes(n, cluster.nodes, inter, params, cuts, [&](int i, int j) { return devices.at(i, j, d); });
  out.objective_ms = nodes.at(0, n - 1, cluster.nodes);
  nodes.stages(0, n - 1, cluster.nodes, top);
  int first_node = 0;
  for (const LevelStage& t : top) {
    // The same split of the sub-chain inside each of the t.replicas nodes of this stage.
    std::vector<LevelStage> inner;
    devices.stages(t.first, t.last, d, inner);
    int offset = 0;
    for (const LevelStage& s : inner) {
      StagePlan stage{s.first, s.last, {}};
      for (int node = first_node; node < first_node + t.replicas; ++node)
        for (int q = 0; q < s.replicas; ++q) stage.devices.push_back(node * d + offset + q);
      std::sort(stage.devices.begin(), stage.devices.end());
      out.stages.push_back(stage);
      offset += s.replicas;
    }
    first_node += t.replicas;
  }
  return out;
}

int pipedream_exact_layers(const Cluster& cluster) {
  // Each level's programme does about n^3/6 · m^2 steps (m units at that level); keep that near
  // 5·10^8 (a second or two here), so 360 layers on 8 devices a node, 14 on 1024.
  const double units = std::max(cluster.devices_per_node, cluster.nodes);
  return std::max(8, static_cast<int>(std::cbrt(6 * 5e8 / (units * units))));
}

PlannerResult plan_pipedream(const Profile& profile, const Cluster& cluster, int global_batch,
                             const PlannerOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int exact_layers = options.max_exact_layers > 0 ? options.max_exact_layers : pipedream_exact_layers(cluster);
  if (profile.size() > exact_layers)
    return plan_coarsened(profile, exact_layers, cluster, global_batch, options, plan_pipedream);
  const PipeDreamPartition partition = pipedream_partition(profile, cluster);
  int most = 0;
  for (const StagePlan& s : partition.stages) most = std::max(most, s.replicas());
  std::vector<Plan> candidates;
  for (int m : microbatch_candidates(global_batch, options, cluster.devices())) {
    if (global_batch / m < most) continue;  // every replica needs a sample of each micro-batch
    Plan plan = candidate_plan(profile, "pipedream", global_batch, m, ScheduleKind::dapple, options.cost.overlap_allreduce);
    plan.stages = partition.stages;
    candidates.push_back(std::move(plan));
  }
  PlannerResult result = best_of(profile, cluster, candidates, options.cost,
                                 loom::detail::concat("a stage has ", most, " replicas, more than the global batch"));
  result.note += (result.note.empty() ? "" : "; ") +
                 loom::detail::concat("PipeDream objective ", partition.objective_ms, " ms per minibatch");
  result.planning_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace loom::planner
