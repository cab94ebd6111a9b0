// The DAPPLE planner's exact search (see dapple_planner.h for the recurrences).
#include <loom/planner/dapple_planner.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include <loom/planner/plan_score.h>

#include "balanced_split.h"
#include <loom/base/error.h>

namespace loom::planner {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
using Clock = std::chrono::steady_clock;

// Why a search stopped early (thrown out of Search::front, caught by plan_dapple).
struct Stopped {
  const char* search;  // PlannerResult::search
};

// The time and memory a search may take (PlannerOptions::time_limit_s, kMaxSearchBytes).
struct Budget {
  bool timed = false;
  Clock::time_point deadline;

  void check(double bytes) const {
    if (bytes > kMaxSearchBytes) throw Stopped{"size-limited"};
    if (timed && Clock::now() > deadline) throw Stopped{"time-limited"};
  }
};

// One Pareto-optimal completion of a state: the stage covers layers first..last_layer, the rest
// of the pipeline is entry `child_entry` of state `child` (-1: this is the last stage).
struct Entry {
  double p, a;
  double round_trip;  // Σ w_e from this stage to the end
  int stages;         // stages from this one to the end, capped at M
  int last_layer;
  int child;
  int child_entry;
};

// A placement of `replicas` on a (sorted) node usage, in that usage's frame.
struct Placed {
  std::vector<int> devices;
  std::vector<int> usage_after;  // same frame, not sorted
  int next_usage = -1;           // id of usage_after sorted
  LinearCost allreduce;
};

class Search {
 public:
  Search(const Profile& profile, const Cluster& cluster, int global_batch, int microbatches, PlacementPolicy policy,
         const CostOptions& options, bool overlap, double upper_bound, bool greedy = false, const Budget* budget = nullptr)
      : profile_(profile), cluster_(cluster), budget_(budget), policy_(policy), overlap_(overlap), greedy_(greedy),
        m_(microbatches),
        b_(global_batch / microbatches), n_(profile.size()), devices_(cluster.devices()),
        max_replicas_(std::min(devices_, b_)), upper_bound_(upper_bound) {
    state_factor_ = 2 + options.optimizer_state_factor;
    // Prefix sums per replica count r, at ceil(b / r) rows per replica.
    forward_.assign(max_replicas_ + 1, std::vector<double>(n_ + 1, 0));
    backward_ = activation_ = forward_;
    layer_backward_.assign(max_replicas_ + 1, std::vector<double>(n_, 0));
    input_.assign(max_replicas_ + 1, std::vector<double>(n_, 0));
    params_.assign(n_ + 1, 0);
    for (int l = 0; l < n_; ++l) params_[l + 1] = params_[l] + profile.layers[l].parameter_bytes;
    for (int r = 1; r <= max_replicas_; ++r) {
      const int rows = ceil_div(b_, r);
      for (int l = 0; l < n_; ++l) {
        const LayerCost c = profile.cost_at(l, rows);
        forward_[r][l + 1] = forward_[r][l] + c.forward_ms;
        backward_[r][l + 1] = backward_[r][l] + c.backward_ms;
        layer_backward_[r][l] = c.backward_ms;
        activation_[r][l + 1] = activation_[r][l] + c.activation_bytes;
        input_[r][l] = c.boundary_bytes;
      }
    }
    cut_bytes_.resize(n_);
    for (int l = 0; l < n_; ++l) cut_bytes_[l] = profile.cost_at(l, b_).boundary_bytes;
    // Work before layer k done by a prefix that uses at most u devices, at the least.
    prefix_bound_.assign(devices_ + 1, std::vector<double>(n_ + 1, 0));
    for (int u = 1; u <= devices_; ++u) {
      for (int l = 0; l < n_; ++l) {
        double least = kInfinity;
        for (int r = 1; r <= std::min(u, max_replicas_); ++r)
          least = std::min(least, forward_[r][l + 1] - forward_[r][l] + backward_[r][l + 1] - backward_[r][l]);
        prefix_bound_[u][l + 1] = prefix_bound_[u][l] + least;
      }
    }
  }

  struct Result {
    double step_ms = kInfinity;
    std::vector<int> last_layers, replicas;
  };

  Result run() {
    Result best;
    if (max_replicas_ < 1) return best;
    const int empty = usage_id(std::vector<int>(cluster_.nodes, 0));
    for (int r = 1; r <= max_replicas_; ++r) {
      const int id = front(0, empty, r);
      const std::vector<Entry>& entries = fronts_[id];
      for (std::size_t e = 0; e < entries.size(); ++e) {
        const double l = entries[e].p + entries[e].a;
        if (l < best.step_ms) {
          best.step_ms = l;
          best.replicas.clear();
          best.last_layers.clear();
          int state = id, index = static_cast<int>(e), replicas = r;
          while (state >= 0) {
            const Entry& en = fronts_[state][index];
            best.replicas.push_back(replicas);
            best.last_layers.push_back(en.last_layer);
            replicas = en.child >= 0 ? state_replicas_[en.child] : 0;
            state = en.child;
            index = en.child_entry;
          }
        }
      }
    }
    return best;
  }

  long states() const { return static_cast<long>(fronts_.size()); }

  // No plan with this M beats this: with the last element as Q, L ≥ the work of passing every
  // element once; with the busiest stage as Q, L ≥ M times its work, which is at least a 1/D share
  // of a micro-batch's work:  L ≥ max(Σ_l min_r work_l(ceil(b/r)), M · Σ_l min_r r·work_l(ceil(b/r)) / D).
  double lower_bound() const {
    if (max_replicas_ < 1) return kInfinity;
    double share = 0;
    for (int l = 0; l < n_; ++l) {
      double least = kInfinity;
      for (int r = 1; r <= max_replicas_; ++r)
        least = std::min(least, r * (forward_[r][l + 1] - forward_[r][l] + backward_[r][l + 1] - backward_[r][l]));
      share += least;
    }
    return std::max(prefix_bound_[devices_][n_], m_ * share / devices_);
  }

 private:
  int usage_id(std::vector<int> usage) {
    std::stable_sort(usage.begin(), usage.end(), std::greater<int>());
    auto [it, inserted] = usage_ids_.try_emplace(usage, static_cast<int>(usages_.size()));
    if (inserted) {
      usages_.push_back(usage);
      bytes_ += 2 * usage.size() * sizeof(int) + 96;
    }
    return it->second;
  }

  int used(int usage) const {
    int total = 0;
    for (int u : usages_[usage]) total += u;
    return total;
  }

  const Placed& placed(int usage, int replicas) {
    const long key = static_cast<long>(usage) * (devices_ + 1) + replicas;
    auto it = placed_.find(key);
    if (it != placed_.end()) return it->second;
    Placed p;
    NodeUsage nodes(cluster_.nodes, cluster_.devices_per_node);
    nodes.used = usages_[usage];
    p.devices = place_stage(nodes, replicas, policy_);
    p.usage_after = nodes.used;
    p.next_usage = usage_id(nodes.used);
    p.allreduce = allreduce_cost(cluster_, p.devices);
    bytes_ += sizeof(Placed) + 64 + (p.devices.size() + p.usage_after.size() + cluster_.nodes) * sizeof(int);
    return placed_.emplace(key, std::move(p)).first->second;
  }

  // With overlap: for every layer range of a stage placed like (usage, replicas), what of its
  // bucketed allreduce still runs after its last backward (BucketedAllreduce, as evaluate() counts
  // it), indexed first * n + last.
  const std::vector<double>& overlap_tails(int usage, int replicas) {
    const long key = static_cast<long>(usage) * (devices_ + 1) + replicas;
    auto it = overlap_tails_.find(key);
    if (it != overlap_tails_.end()) return it->second;
    const LinearCost allreduce = placed(usage, replicas).allreduce;
    std::vector<double> tails(static_cast<std::size_t>(n_) * n_, 0.0);
    for (int last = 0; last < n_; ++last) {
      BucketedAllreduce buckets(allreduce);
      for (int first = last; first >= 0; --first) {
        buckets.add_layer(profile_.layers[first].parameter_bytes, layer_backward_[replicas][first]);
        tails[static_cast<std::size_t>(first) * n_ + last] = buckets.tail_ms(true);
      }
    }
    bytes_ += tails.size() * sizeof(double);
    return overlap_tails_.emplace(key, std::move(tails)).first->second;
  }

  // The transfer from a stage of `replicas` placed on `usage` to the next stage of `next_replicas`.
  LinearCost transfer(int usage, int replicas, int next_replicas) {
    const long key = (static_cast<long>(usage) * (devices_ + 1) + replicas) * (devices_ + 1) + next_replicas;
    auto it = transfers_.find(key);
    if (it != transfers_.end()) return it->second;
    const Placed& here = placed(usage, replicas);
    NodeUsage nodes(cluster_.nodes, cluster_.devices_per_node);
    nodes.used = here.usage_after;  // the same frame as here.devices
    const std::vector<int> next = place_stage(nodes, next_replicas, policy_);
    const LinearCost cost = transfer_cost(cluster_, here.devices, next, b_);
    transfers_.emplace(key, cost);
    return cost;
  }

  // The Pareto front of the state (stage starts at `first`, nodes used as `usage`, `replicas`).
  int front(int first, int usage, int replicas) {
    const long key = (static_cast<long>(usage) * (devices_ + 1) + replicas) * (n_ + 1) + first;
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    if (budget_ && fronts_.size() % 256 == 0) budget_->check(bytes_);

    const Placed& here = placed(usage, replicas);
    const LinearCost allreduce = here.allreduce;
    const std::vector<double>* tails = overlap_ ? &overlap_tails(usage, replicas) : nullptr;
    const int next_usage = here.next_usage;
    const int used_before = used(usage);
    const int free_after = devices_ - used_before - replicas;
    const double bound = used_before > 0 ? prefix_bound_[used_before][first] : 0.0;
    const double memory = cluster_.device_memory, m = m_;
    const double input = first > 0 ? input_[replicas][first - 1] : 0.0;

    std::vector<Entry> candidates;
    for (int last = first; last < n_; ++last) {
      const double weights = params_[last + 1] - params_[first];
      const double fixed = weights * state_factor_;
      const double activations = activation_[replicas][last + 1] - activation_[replicas][first] + input;
      if (fixed + activations > memory) break;  // one micro-batch in flight does not fit, nor will longer stages
      const double fit = activations > 0 ? std::floor((memory - fixed) / activations) : kInfinity;
      const double f = forward_[replicas][last + 1] - forward_[replicas][first];
      const double bw = backward_[replicas][last + 1] - backward_[replicas][first];
      const double work = f + bw;
      const double ar = overlap_ ? (*tails)[static_cast<std::size_t>(first) * n_ + last] : allreduce.at(weights);
      if (m * work + bound > upper_bound_) break;  // longer stages only work more
      if (last == n_ - 1) {
        const double p = m * work;  // the last stage: K = 1, so its loop is its own work
        if (p + bound <= upper_bound_) candidates.push_back({p, ar, work, 1, last, -1, -1});
        continue;
      }
      for (int next = 1; next <= std::min(free_after, max_replicas_); ++next) {
        const int child = front(last + 1, next_usage, next);
        if (fronts_[child].empty()) continue;
        const double t = transfer(usage, replicas, next).at(cut_bytes_[last]);
        for (std::size_t e = 0; e < fronts_[child].size(); ++e) {
          const Entry& c = fronts_[child][e];
          if (work + 2 * t + c.p + bound > upper_bound_) break;  // entries come in increasing P
          const int stages = std::min(c.stages + 1, m_);  // = K, the warm-up depth of this stage
          if (stages > fit) continue;
          const double round_trip = work + 2 * t + c.round_trip;
          const double pc = std::max(m * 2 * t, 2 * t + c.p);
          double p = std::max(m * work, work + pc);
          if (stages < m_) p = std::max(p, round_trip * (1 + (m - 1) / stages));
          if (p + bound > upper_bound_) continue;
          const double a = std::max(ar, c.a - t - bw);
          candidates.push_back({p, a, round_trip, stages, last, child, static_cast<int>(e)});
        }
      }
    }
    const int id = static_cast<int>(fronts_.size());
    fronts_.push_back(pareto(std::move(candidates)));
    bytes_ += fronts_.back().size() * sizeof(Entry) + 128;  // the entries, the memo and the bookkeeping

    state_replicas_.push_back(replicas);
    memo_.emplace(key, id);
    return id;
  }

  // Keeps the entries no other entry with the same stage count beats in P, A and round trip at
  // once (the stage count is not ordered: more stages allow more micro-batches in flight but need
  // more memory). The result is sorted by P.
  std::vector<Entry> pareto(std::vector<Entry> candidates) const {
    std::sort(candidates.begin(), candidates.end(), [](const Entry& x, const Entry& y) {
      if (x.p != y.p) return x.p < y.p;
      if (x.a != y.a) return x.a < y.a;
      return x.round_trip < y.round_trip;
    });
    std::vector<std::vector<const Entry*>> kept_by_stages(m_ + 1);
    std::vector<Entry> kept;
    if (greedy_) {
      // The quick pass: fewer stages counted as better and the round trip ignored, which keeps
      // fronts small; its plan is only an upper bound for the exact pass.
      std::vector<double> least_a(m_ + 2, kInfinity);
      for (const Entry& c : candidates) {
        bool dominated = false;
        for (int k = 1; k <= c.stages && !dominated; ++k) dominated = least_a[k] <= c.a;
        if (dominated) continue;
        least_a[c.stages] = c.a;
        kept.push_back(c);
      }
      return kept;
    }
    for (const Entry& c : candidates) {
      auto& same = kept_by_stages[c.stages];
      bool dominated = false;
      for (const Entry* k : same) {
        if (k->a <= c.a && k->round_trip <= c.round_trip) {
          dominated = true;
          break;
        }
      }
      if (dominated) continue;
      same.push_back(&c);
      kept.push_back(c);
    }
    return kept;
  }

  const Profile& profile_;
  const Cluster& cluster_;
  const Budget* budget_;
  double bytes_ = 0;  // what the caches and fronts hold, roughly, for the budget
  PlacementPolicy policy_;
  bool overlap_, greedy_;
  int m_, b_, n_, devices_, max_replicas_;
  double upper_bound_;
  double state_factor_ = 4;
  std::vector<std::vector<double>> forward_, backward_, activation_, input_, prefix_bound_, layer_backward_;
  std::unordered_map<long, std::vector<double>> overlap_tails_;
  std::vector<double> params_, cut_bytes_;
  std::map<std::vector<int>, int> usage_ids_;
  std::vector<std::vector<int>> usages_;
  std::unordered_map<long, Placed> placed_;
  std::unordered_map<long, LinearCost> transfers_;
  std::unordered_map<long, int> memo_;
  std::vector<std::vector<Entry>> fronts_;
  std::vector<int> state_replicas_;
};

// Node relabelling cannot tell the policies apart on one node or with one device per node.
std::vector<PlacementPolicy> distinct_policies(const Cluster& cluster, const PlannerOptions& options) {
  std::vector<PlacementPolicy> policies = options.policies;
  if (policies.empty()) policies.assign(std::begin(kAllPlacementPolicies), std::end(kAllPlacementPolicies));
  if (cluster.nodes == 1 || cluster.devices_per_node == 1) policies.resize(1);
  return policies;
}

// Uniform plans (S stages of D / S replicas, compute-balanced cuts) for a first upper bound.
std::vector<Plan> uniform_plans(const Profile& profile, const Cluster& cluster, int global_batch, int microbatches,
                                const std::vector<PlacementPolicy>& policies, bool overlap) {
  std::vector<Plan> plans;
  const int b = global_batch / microbatches;
  for (int stages = 1; stages <= std::min(profile.size(), cluster.devices()); ++stages) {
    const int replicas = std::min(cluster.devices() / stages, b);
    std::vector<double> work(profile.size());
    for (int l = 0; l < profile.size(); ++l) {
      const LayerCost c = profile.cost_at(l, ceil_div(b, replicas));
      work[l] = c.forward_ms + c.backward_ms;
    }
    const std::vector<int> last = detail::balanced_split(work, stages);
    for (PlacementPolicy policy : policies) {
      const auto devices =
          place_stages(cluster.nodes, cluster.devices_per_node, std::vector<int>(stages, replicas), policy);
      Plan plan;
      plan.model = profile.model;
      plan.planner = "dapple";
      plan.placement = to_string(policy);
      plan.global_batch = global_batch;
      plan.microbatches = microbatches;
      plan.overlap_allreduce = overlap;
      for (int s = 0, first = 0; s < stages; first = last[s] + 1, ++s) plan.stages.push_back({first, last[s], devices[s]});
      plans.push_back(std::move(plan));
    }
  }
  return plans;
}

Plan make_plan(const Profile& profile, const Cluster& cluster, int global_batch, int microbatches,
               PlacementPolicy policy, bool overlap, const Search::Result& found) {
  Plan plan;
  plan.overlap_allreduce = overlap;
  plan.model = profile.model;
  plan.planner = "dapple";
  plan.placement = to_string(policy);
  plan.global_batch = global_batch;
  plan.microbatches = microbatches;
  plan.schedule = ScheduleKind::dapple;
  const auto devices = place_stages(cluster.nodes, cluster.devices_per_node, found.replicas, policy);
  for (std::size_t s = 0, first = 0; s < found.replicas.size(); first = found.last_layers[s] + 1, ++s)
    plan.stages.push_back({static_cast<int>(first), found.last_layers[s], devices[s]});
  return plan;
}

// The best distinct plans seen by the search, by the cost model, for the simulator to settle.
class Shortlist {
 public:
  explicit Shortlist(int capacity) : capacity_(capacity) {}

  void add(double step_ms, const Plan& plan) {
    if (capacity_ <= 0) return;
    for (const auto& [ms, p] : plans_)
      if (p.microbatches == plan.microbatches && p.stages == plan.stages) return;
    plans_.push_back({step_ms, plan});
    std::sort(plans_.begin(), plans_.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    if (static_cast<int>(plans_.size()) > capacity_) plans_.pop_back();
  }

  const std::vector<std::pair<double, Plan>>& plans() const { return plans_; }

 private:
  int capacity_;
  std::vector<std::pair<double, Plan>> plans_;
};

}  // namespace

namespace {

// One run of the planner: the bound found so far, the plan that holds it, and the shortlist for
// the simulator, shared by the passes below.
struct DappleRun {
  const Profile& profile;
  const Cluster& cluster;
  int global_batch;
  const PlannerOptions& options;
  std::vector<PlacementPolicy> policies;
  Budget budget;
  Shortlist shortlist;
  PlannerResult result;
  double best = kInfinity;   // the step time to beat (a hair above the best plan's)
  double best_exact = kInfinity;
  Plan best_plan;

  void progress(const std::string& what) const {
    if (options.progress) options.progress("dapple: " + what);
  }
  void offer(double step_ms, const Plan& plan) {
    shortlist.add(step_ms, plan);
    if (step_ms * (1 + 1e-9) >= best) return;
    best = step_ms * (1 + 1e-9);
    best_plan = plan;
  }
};

struct Candidate {
  double quick, bound;
  int m;
};

// Upper bounds first, so that the exact searches can prune: uniform plans, then a quick pass of
// the search with smaller fronts (see Search::pareto).
void uniform_pass(DappleRun& run, const std::vector<int>& counts) {
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (i > 0) run.budget.check(0.0);
    for (const Plan& plan : uniform_plans(run.profile, run.cluster, run.global_batch, counts[i], run.policies,
                                          run.options.cost.overlap_allreduce)) {
      const PlanCost cost = evaluate(run.profile, run.cluster, plan, run.options.cost);
      if (cost.feasible) run.offer(cost.step_ms, plan);
    }
  }
}

std::vector<Candidate> quick_pass(DappleRun& run, const std::vector<int>& counts) {
  std::vector<Candidate> order;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const int m = counts[i];
    run.progress(loom::detail::concat("quick pass, M = ", m, " (", i + 1, "/", counts.size(), ")"));
    double quick = kInfinity;
    for (PlacementPolicy policy : run.policies) {
      Search search(run.profile, run.cluster, run.global_batch, m, policy, run.options.cost,
                    run.options.cost.overlap_allreduce, run.best, true, &run.budget);
      const Search::Result found = search.run();
      run.result.search_states += search.states();
      quick = std::min(quick, found.step_ms);
      if (found.step_ms < kInfinity)
        run.offer(found.step_ms, make_plan(run.profile, run.cluster, run.global_batch, m, policy,
                                           run.options.cost.overlap_allreduce, found));
    }
    const double bound = Search(run.profile, run.cluster, run.global_batch, m, run.policies[0], run.options.cost,
                                false, 0).lower_bound();
    order.push_back({quick, bound, m});
  }
  // The exact pass visits the M whose quick plans did best first.
  std::sort(order.begin(), order.end(), [](const Candidate& x, const Candidate& y) { return x.quick < y.quick; });
  return order;
}

// Skips an M whose lower bound cannot beat the best so far.
void exact_pass(DappleRun& run, const std::vector<Candidate>& order) {
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Candidate& candidate = order[i];
    if (candidate.bound > run.best) continue;
    run.progress(loom::detail::concat("exact search, M = ", candidate.m, " (", i + 1, "/", order.size(), ")"));
    for (PlacementPolicy policy : run.policies) {
      Search search(run.profile, run.cluster, run.global_batch, candidate.m, policy, run.options.cost,
                    run.options.cost.overlap_allreduce, run.best, false, &run.budget);
      const Search::Result found = search.run();
      run.result.search_states += search.states();
      if (!(found.step_ms < run.best)) continue;
      run.best = run.best_exact = found.step_ms;
      run.best_plan = make_plan(run.profile, run.cluster, run.global_batch, candidate.m, policy,
                                run.options.cost.overlap_allreduce, found);
      run.shortlist.add(found.step_ms, run.best_plan);
    }
  }
}

// The plan to return: the objective's optimum (or, when stopped, the best found), checked against
// the closed form; then, with a shortlist, the fastest of it that fits under the one model.
void settle(DappleRun& run) {
  PlannerResult& result = run.result;
  if (run.best_plan.stages.empty()) {
    result.note = "no plan fits in device memory";
    return;
  }
  const PlanCost cost = evaluate(run.profile, run.cluster, run.best_plan, run.options.cost);
  const double scored = result.search == "exact" ? run.best_exact : cost.step_ms;
  if (result.search == "exact" && (std::abs(cost.step_ms - scored) > 1e-6 * std::max(1.0, scored) || !cost.feasible))
    LOOM_THROW("internal error: the DAPPLE search scored ", run.best_plan.strategy(), " at ", scored,
               " ms but the cost model says ", cost.step_ms, " ms");
  keep_scored(result, run.best_plan, score_plan(run.profile, run.cluster, run.best_plan, run.options.cost));
  if (!run.shortlist.plans().empty()) {
    run.progress(loom::detail::concat("scoring ", run.shortlist.plans().size(), " candidates"));
    for (const auto& [ms, plan] : run.shortlist.plans()) {
      PartitionEvaluation score = score_plan(run.profile, run.cluster, plan, run.options.cost);
      if (better_score(score, result)) keep_scored(result, plan, std::move(score));
    }
    result.note = loom::detail::concat("the fastest under the one model of its ", run.shortlist.plans().size(),
                                       " best candidates; its objective's optimum is ", scored, " ms");
  }
  result.objective_ms = scored;
  if (!result.found) result.note += (result.note.empty() ? "" : "; ") + ("does not fit: " + result.score.why_not);
}

}  // namespace

PlannerResult plan_dapple(const Profile& profile, const Cluster& cluster, int global_batch,
                          const PlannerOptions& options) {
  const auto start = Clock::now();
  validate(profile);
  const int exact_layers = options.max_exact_layers > 0 ? options.max_exact_layers : kDappleExactLayers;
  if (profile.size() > exact_layers)
    return plan_coarsened(profile, exact_layers, cluster, global_batch, options, plan_dapple);
  DappleRun run{profile, cluster, global_batch, options, distinct_policies(cluster, options), {},
                Shortlist(options.simulate_candidates), {}, kInfinity, kInfinity, {}};
  if (options.time_limit_s > 0) {
    run.budget.timed = true;
    run.budget.deadline = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(std::min(options.time_limit_s, 1e7)));
  }
  const std::vector<int> counts = microbatch_candidates(global_batch, options, cluster.devices());
  try {
    run.progress("uniform plans");
    uniform_pass(run, counts);
    exact_pass(run, quick_pass(run, counts));
  } catch (const Stopped& stopped) {
    run.result.search = stopped.search;
    run.progress(loom::detail::concat("search stopped (", stopped.search, ")"));
  }
  settle(run);
  if (run.result.search != "exact")
    run.result.note = loom::detail::concat("search ", run.result.search, ": the best plan found before it stopped",
                                           run.result.note.empty() ? "" : "; ", run.result.note);
  run.result.planning_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return run.result;
}

}  // namespace loom::planner
