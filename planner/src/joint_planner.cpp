// The joint search over partition, replicas, schedule kind and M (see joint_planner.h).
#include <loom/planner/joint_planner.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include <loom/base/error.h>
#include <loom/planner/baselines.h>
#include <loom/planner/dapple_planner.h>
#include <loom/planner/pipedream_planner.h>
#include <loom/planner/plan_score.h>
#include <loom/planner/planner.h>
#include <loom/planner/recomputation.h>
#include <loom/schedule/generators.h>

#include "layer_sums.h"
#include "suffix_bound.h"

namespace loom::planner {

namespace {

using Clock = std::chrono::steady_clock;

// Faster than `best_ms` by more than rounding: a plan the search finds again at the same step time
// (the seeds' plans are points of its space) does not replace the first one found.
bool beats(double step_ms, double best_ms) { return step_ms < best_ms * (1 - 1e-9); }

// A candidate that fits and is faster than the best so far becomes the best (`from`: the seed's
// planner, empty for the search's own).
void keep(JointResult& best, double& best_ms, Partition partition, PartitionEvaluation e, const std::string& from) {
  best_ms = e.simulation.step_ms;
  best.found = true;
  best.partition = std::move(partition);
  best.evaluation = std::move(e);
  best.seeded_from = from;
}

// One (kind, stage count, M): each stage's replicas, chosen at its first chunk (stages take their
// devices in order, so a prefix of stages fixes their placement), and the cuts of the chain into
// its S·v virtual stages, depth first: a bound that prunes a prefix drops every replica vector
// that starts with it.
struct CutSearch {
  const Profile& profile;
  const Cluster& cluster;
  const JointOptions& options;
  const schedule::Schedule& sched;
  Partition partition;            // replicas 0 for a stage not reached yet
  int rows_per_microbatch = 0;
  int devices_left = 0;           // not given to a stage yet
  std::vector<int> rows;          // per pipeline stage: rows of a micro-batch per replica
  std::vector<LinearCost> allreduce;  // per pipeline stage: its gradient allreduce among its replicas
  std::vector<double> busy_ms;    // per pipeline stage: M · Σ (F + B) + AR of the chunks cut so far
  std::vector<double> static_bytes;
  // Per pipeline stage s (set when virtual stage s, its first chunk, is cut): Σ F and Σ B of one
  // micro-batch over virtual stages 0..s−1, the least time before s starts (the first micro-batch's
  // forward reaching it) and after its last backward (that gradient going back down to stage 0).
  std::vector<double> head_ms, tail_ms;
  std::vector<double> compute_ms;  // per pipeline stage: M · Σ (F + B) alone
  // Per pipeline stage: its last compute is the backward (B, not split) of its first chunk, so the
  // step lasts at least head + its compute + tail.
  std::vector<char> ends_with_first_backward;
  // Per rows count: the layers' prefix sums at those rows.
  std::map<int, detail::LayerSums> sums_by_rows;
  // Per rows count, per first layer: range_cost and parameter_bytes of first..L−2 (below).
  std::map<int, std::vector<std::pair<RangeCost, double>>> all_but_last_by_rows;
  JointResult& best;
  double& closest_excess;  // bytes over the cap of the closest candidate that did not fit
  double best_ms;
  Clock::time_point deadline;
  bool stopped = false;
  long nodes = 0;
  // The most the profile's ties can take off a stage's static bytes (shared_tie_bytes): the
  // static-bytes bound subtracts it, since a later chunk may bring a tie's other layer.
  double tie_slack = 0;
  CostOptions bound_cost{};  // options.cost, with ZeRO-1 when the search may turn it on (the least bytes)
  // Single-chunk kinds: the bound on the stages not cut yet (suffix_bound.h; null: not made, or
  // a multi-chunk kind), and whether every stage ends with its first micro-batch's backward (the
  // bound's head-and-tail form holds).
  const detail::SuffixBound* suffix = nullptr;
  bool every_stage_ends_with_backward = false;
  // One micro-batch's forwards and backwards through the virtual stages cut so far (in order), and
  // whether the kind splits backwards into BI and BW (then a chunk's BW may come after the gradient
  // has gone on down, and only the forwards bound a chunk from before).
  double forwards_ms = 0, backwards_ms = 0;
  bool split_backward = false;
  // Σ over the stages placed so far of replicas · (head + busy): the device time they are taken.
  double devices_used_ms = 0;
  // Where every stage ends with its first chunk's backward: Σ replicas · (head + tail + compute).
  double devices_used_tail_ms = 0;
  // device_rest[l]: the least device time layers l.. can take, M · Σ min over R of R · (F + B) at
  // ceil(b / R) rows (whichever stage computes a layer, its R replicas are busy that long with it).
  std::vector<double> device_rest{};

  void evaluate() {
    ++best.evaluated;
    work += kSimulationNodes;
    PartitionEvaluation e;
    try {
      e = evaluate_partition(profile, cluster, partition, options.cost, &sched);
    } catch (const loom::Error&) {
      return;  // sizes the kind refuses
    }
    if (!e.fits && e.peak_bytes - cluster.device_memory < closest_excess) {
      closest_excess = e.peak_bytes - cluster.device_memory;
      best.why_none = "closest: schedule " + std::string(schedule::schedule_kind_name(partition.kind)) + ", M=" +
                      std::to_string(partition.microbatches) + ", " + e.why_not;
    }
    if (!beats(e.simulation.step_ms, best_ms)) return;  // recomputation only adds time
    Partition fitted = partition;
    const bool replicated = std::any_of(partition.replicas.begin(), partition.replicas.end(), [](int r) { return r > 1; });
    if (!e.fits && options.search_zero && !options.cost.zero && replicated) {
      fitted.zero = true;  // the same step, less optimizer state per replica
      e = evaluate_partition(profile, cluster, fitted, options.cost, &sched);
    }
    std::string why;
    if (!e.fits && !(options.recompute && fit_by_recomputation(profile, cluster, fitted, e, options.cost, why))) return;
    if (!beats(e.simulation.step_ms, best_ms)) return;
    keep(best, best_ms, std::move(fitted), std::move(e), "");
  }

  const detail::LayerSums& sums(int at_rows) {
    return sums_by_rows.try_emplace(at_rows, profile, at_rows).first->second;
  }

  // For each first layer, the last virtual stage's range from it, all but the profile's last layer
  // (cut_ranges adds that one): the same sums as range_cost and parameter_bytes, made once per rows
  // count instead of once per candidate.
  const std::vector<std::pair<RangeCost, double>>& all_but_last(int at_rows) {
    auto& table = all_but_last_by_rows[at_rows];
    if (!table.empty()) return table;
    const int last = profile.size() - 2;
    for (int first = 0; first < profile.size(); ++first)
      table.emplace_back(range_cost(profile, first, last, at_rows),
                         first <= last ? profile.parameter_bytes(first, last) : 0.0);
    return table;
  }

  // The fewest rows any stage can still compute at: the stages placed so far, and a stage to come
  // with every device left but one for each other stage to come.
  int fewest_rows() const {
    int unplaced = 0, fewest = rows_per_microbatch;
    for (std::size_t s = 0; s < rows.size(); ++s) {
      if (partition.replicas[s] == 0) ++unplaced;
      else fewest = std::min(fewest, rows[s]);
    }
    if (unplaced > 0) {
      const int most = std::min(devices_left - (unplaced - 1), rows_per_microbatch);
      fewest = std::min(fewest, ceil_div(rows_per_microbatch, most));
    }
    return fewest;
  }

  double busy_total() const {
    double total = 0;
    for (double b : busy_ms) total += b;
    return total;
  }

  // Which stages' programs end with a whole backward of their first chunk (gpipe, dapple, looped).
  void read_schedule() {
    ends_with_first_backward.assign(static_cast<std::size_t>(sched.stages), 0);
    head_ms.assign(static_cast<std::size_t>(sched.stages) + 1, 0.0);
    tail_ms.assign(static_cast<std::size_t>(sched.stages) + 1, 0.0);
    compute_ms.assign(static_cast<std::size_t>(sched.stages), 0.0);
    bool split = false;
    for (const auto& program : sched.programs)
      for (const schedule::Action& a : program)
        split = split || a.op == schedule::Op::BackwardInput || a.op == schedule::Op::BackwardWeight;
    for (int s = 0; s < sched.stages && !split; ++s) {
      const auto& program = sched.programs[static_cast<std::size_t>(s)];
      const auto last = std::find_if(program.rbegin(), program.rend(),
                                     [](const schedule::Action& a) { return schedule::is_compute(a.op); });
      ends_with_first_backward[static_cast<std::size_t>(s)] =
          last != program.rend() && last->op == schedule::Op::Backward && sched.virtual_stage(s, last->chunk) == s;
    }
    split_backward = split;
    every_stage_ends_with_backward =
        std::all_of(ends_with_first_backward.begin(), ends_with_first_backward.end(), [](char e) { return e != 0; });
  }

  // No plan of this (kind, S, M) is faster: the suffix bound of all its stages, or 0 without one.
  double combination_bound() const {
    if (suffix == nullptr) return 0;
    const double head = suffix->head(sched.stages, 0, cluster.devices());
    return every_stage_ends_with_backward ? std::max(head, suffix->head_and_tail(sched.stages, 0, cluster.devices()))
                                          : head;
  }

  long node_budget = 0;   // > 0: stop after this many nodes (budget_hit), the deadline not reached
  bool budget_hit = false;

  // The first pass's budget counts a simulation as kSimulationNodes nodes (one takes some hundreds
  // of partial candidates' time; 64 found the best plans of 16, 64 and 256 on BERT-48 A, VGG-19 C,
  // XLNet-36 C and AmoebaNet-36 B in 10 s), so that a kind whose candidates pass the bounds and
  // are simulated does not take the first pass's time from the others.
  static constexpr long kSimulationNodes = 64;
  long work = 0;

  bool out_of_time() {
    if (options.time_limit_s > 0 && (nodes & 255) == 0 && Clock::now() > deadline) stopped = true;
    if (node_budget > 0 && work >= node_budget) stopped = budget_hit = true;
    ++nodes;
    ++work;
    return stopped;
  }

  void cut(int virtual_stage, int first) {
    if (out_of_time()) return;
    if (virtual_stage == sched.virtual_stages()) return evaluate();
    if (options.prune && virtual_stage == sched.stages && !rest_can_fit(virtual_stage, first, forwards_ms, backwards_ms))
      return;
    const auto stage = static_cast<std::size_t>(sched.stage_of(virtual_stage));
    if (partition.replicas[stage] > 0) return cut_ranges(virtual_stage, first);
    // This stage's first chunk: its replicas, from the devices left (one for each stage to come).
    const int later = sched.stages - static_cast<int>(stage) - 1;
    const int most = std::min(devices_left - later, rows_per_microbatch);
    const int least = later == 0 ? devices_left : 1;
    const int first_device = cluster.devices() - devices_left;
    for (int r = least; r <= most && !stopped; ++r) {
      std::vector<int> stage_devices(static_cast<std::size_t>(r));
      for (int i = 0; i < r; ++i) stage_devices[static_cast<std::size_t>(i)] = first_device + i;
      partition.replicas[stage] = r;
      rows[stage] = ceil_div(rows_per_microbatch, r);
      allreduce[stage] = allreduce_cost(cluster, stage_devices);
      devices_left -= r;
      devices_used_ms += r * head_ms[stage];
      devices_used_tail_ms += r * (head_ms[stage] + tail_ms[stage]);
      cut_ranges(virtual_stage, first);
      devices_left += r;
      devices_used_ms -= r * head_ms[stage];
      devices_used_tail_ms -= r * (head_ms[stage] + tail_ms[stage]);
    }
    partition.replicas[stage] = 0;
  }

  // Prune above this: the best step, and rounding.
  double cutoff() const { return best_ms * (1 + 1e-9); }

  // Every stage's replicas chosen (a multi-chunk kind's second half): whether the virtual stages
  // from `virtual_stage` on can take the layers from `first` with each chunk within cut_ranges'
  // bounds under the best step (its stage's head and busy time; head, tail and compute where it ends
  // with its first chunk's backward; the chunk's own, after `forwards` and before `backwards`) and
  // its bytes under the cap. Those grow with a range, so it is enough that each, in order, takes as
  // many layers as it can.
  // `forwards`, `backwards`: at least one micro-batch's through the virtual stages before.
  bool rest_can_fit(int virtual_stage, int first, double forwards, double backwards) {
    const double limit = cutoff();
    const int total = sched.virtual_stages();
    for (int k = virtual_stage; k < total; ++k) {
      const auto stage = static_cast<std::size_t>(sched.stage_of(k));
      const detail::LayerSums& layers = sums(rows[stage]);
      int end = first - 1;
      for (int last = first; last <= profile.size() - (total - k); ++last) {
        const double weights = layers.weights(first, last + 1);
        const double compute = partition.microbatches * layers.work(first, last + 1);
        const double busy = compute + (options.cost.overlap_allreduce ? 0.0 : allreduce[stage].at(weights));
        const double bytes = static_bytes[stage] + state_bytes(weights, partition.replicas[stage], bound_cost);
        const bool tail_over =
            ends_with_first_backward[stage] && head_ms[stage] + tail_ms[stage] + compute_ms[stage] + compute > limit;
        const bool chunk_over = forwards + compute + (split_backward ? 0.0 : backwards) > limit;
        if (head_ms[stage] + busy_ms[stage] + busy > limit || tail_over || chunk_over ||
            bytes - tie_slack > cluster.device_memory)
          break;
        end = last;
      }
      if (end < first) return false;
      first = end + 1;
    }
    return first == profile.size();
  }

  // Whether the devices, each busy at most the best step after its stage's head, have time for the
  // layers after `last`, this range of `stage` taking `busy` more: the placed stages' R · (step −
  // head − busy) and the devices left's step − the next stage's head (later stages start later).
  // Where every stage ends with its first chunk's backward, the same with each stage's head, tail
  // and compute.
  bool devices_have_time(std::size_t stage, int last, double busy, double compute, const RangeCost& work) {
    if (!std::isfinite(best_ms)) return true;  // nothing found yet bounds the step
    if (device_rest.empty()) make_device_rest();
    const double limit = cutoff();
    const double need = device_rest[static_cast<std::size_t>(last) + 1];
    const double placed = limit * (cluster.devices() - devices_left);
    const int replicas = partition.replicas[stage];
    const double next_head = head_ms[stage] + work.forward_ms;
    if (need > placed - devices_used_ms - replicas * busy + devices_left * (limit - next_head)) return false;
    if (!every_stage_ends_with_backward) return true;
    const double next_tail = tail_ms[stage] + work.backward_ms;
    return need <= placed - devices_used_tail_ms - replicas * compute + devices_left * (limit - next_head - next_tail);
  }

  void make_device_rest() {
    device_rest.assign(static_cast<std::size_t>(profile.size()) + 1, 0.0);
    const int most = std::min(cluster.devices(), rows_per_microbatch);
    for (int l = profile.size() - 1; l >= 0; --l) {
      double least = std::numeric_limits<double>::infinity();
      for (int r = 1; r <= most; ++r) {
        const LayerCost c = profile.cost_at(l, ceil_div(rows_per_microbatch, r));
        least = std::min(least, r * (c.forward_ms + c.backward_ms));
      }
      device_rest[static_cast<std::size_t>(l)] = device_rest[static_cast<std::size_t>(l) + 1] + partition.microbatches * least;
    }
  }

  // The stages after `stage` (single-chunk kinds), its range ending at `last`: at least the suffix
  // bound after the forwards (and, where every stage ends with a backward, the backwards) before them.
  double later_stages_bound(std::size_t stage, int last, const RangeCost& work) const {
    const int later = sched.stages - static_cast<int>(stage) - 1;
    if (suffix == nullptr || later == 0) return 0;
    double bound = head_ms[stage] + work.forward_ms + suffix->head(later, last + 1, devices_left);
    if (every_stage_ends_with_backward)
      bound = std::max(bound, head_ms[stage] + tail_ms[stage] + work.forward_ms + work.backward_ms +
                                  suffix->head_and_tail(later, last + 1, devices_left));
    return bound;
  }

  // The layer ranges of this virtual stage, its stage's replicas chosen. Each longer range extends
  // the last one's sums by a layer, and the last virtual stage's starts from a table: the same
  // numbers as range_cost and parameter_bytes of the whole range (summing every range afresh was
  // most of the search's time).
  void cut_ranges(int virtual_stage, int first) {
    const int total = sched.virtual_stages();
    const auto stage = static_cast<std::size_t>(sched.stage_of(virtual_stage));
    const detail::LayerSums& to_come = sums(fewest_rows());
    const int last_end = profile.size() - (total - virtual_stage);
    const int last_begin = virtual_stage + 1 == total ? last_end : first;
    const bool whole_rest = last_begin > first;  // the last virtual stage takes every layer left
    auto [work, weights] = whole_rest ? all_but_last(rows[stage])[static_cast<std::size_t>(first)]
                                      : std::pair{range_cost(profile, first, first - 1, rows[stage]), 0.0};
    // A multi-chunk kind's second half: each later chunk is another stage's last, and whether they
    // can take the layers after this one only gets easier as this one grows (rest_can_fit).
    bool rest_fits = !options.prune || virtual_stage < sched.stages || virtual_stage + 1 == total;
    for (int last = last_begin; last <= last_end && !stopped; ++last) {
      extend_range_cost(work, profile, last, rows[stage]);
      weights += profile.layers[static_cast<std::size_t>(last)].parameter_bytes;
      const double compute = partition.microbatches * (work.forward_ms + work.backward_ms);
      // Overlapped, the allreduce may hide entirely: the bound counts none of it.
      const double busy = compute + (options.cost.overlap_allreduce ? 0.0 : allreduce[stage].at(weights));
      const double bytes = state_bytes(weights, partition.replicas[stage], bound_cost);
      double& stage_busy = busy_ms[stage];
      double& stage_bytes = static_bytes[stage];
      // Both grow with `last`: once over the bound, every longer range is too.
      // The layers after `last` still to come, at least as slow as at the fewest rows.
      const double rest = partition.microbatches * to_come.work(last + 1, profile.size());
      const double average = (busy_total() + busy + rest) / sched.stages;
      const double tail = ends_with_first_backward[stage] ? tail_ms[stage] + compute_ms[stage] + compute : 0.0;
      // This chunk: its micro-batches' work starts after the first one's forwards before it and
      // (whole backwards) ends before the last one's backwards below it.
      const double chunk = forwards_ms + compute + (split_backward ? 0.0 : backwards_ms);
      const double bound = std::max({head_ms[stage] + std::max(stage_busy + busy, tail), average, chunk});
      if (options.prune && (bound > cutoff() || stage_bytes + bytes - tie_slack > cluster.device_memory)) break;
      // The devices' time: every stage lasts at most the best step after its head, and the layers
      // to come take at least device_rest of it. What is left shrinks faster than what they need.
      if (options.prune && !devices_have_time(stage, last, busy, compute, work)) break;
      if (options.prune && later_stages_bound(stage, last, work) > cutoff()) continue;
      if (!rest_fits && !(rest_fits = rest_can_fit(virtual_stage + 1, last + 1, forwards_ms + work.forward_ms,
                                                    backwards_ms + work.backward_ms)))
        continue;
      if (virtual_stage < sched.stages) {  // the next stage's head and tail, through this first chunk
        head_ms[stage + 1] = head_ms[stage] + work.forward_ms;
        tail_ms[stage + 1] = tail_ms[stage] + work.backward_ms;
      }
      stage_busy += busy;
      forwards_ms += work.forward_ms;
      backwards_ms += work.backward_ms;
      devices_used_ms += partition.replicas[stage] * busy;
      devices_used_tail_ms += partition.replicas[stage] * compute;
      stage_bytes += bytes;
      compute_ms[stage] += compute;
      partition.layers[static_cast<std::size_t>(virtual_stage)] = {first, last};
      cut(virtual_stage + 1, last + 1);
      stage_busy -= busy;
      forwards_ms -= work.forward_ms;
      backwards_ms -= work.backward_ms;
      devices_used_ms -= partition.replicas[stage] * busy;
      devices_used_tail_ms -= partition.replicas[stage] * compute;
      stage_bytes -= bytes;
      compute_ms[stage] -= compute;
    }
  }
};

// The seeds (JointOptions::seed): the DAPPLE planner's, the GPipe baseline's and data parallelism's
// plans (under the same allreduce assumption), simulated.
void seed(const Profile& profile, const Cluster& cluster, int global_batch, const JointOptions& options,
          JointResult& best, double& best_ms) {
  PlannerOptions planner;
  planner.cost = options.cost;
  planner.microbatch_counts = options.microbatch_counts;
  planner.time_limit_s = options.time_limit_s;
  planner.simulate_candidates = 50;  // as `loom plan` runs the DAPPLE planner by default
  const bool overlap = options.cost.overlap_allreduce;
  std::vector<std::pair<std::string, Plan>> plans = options.seed_plans;
  if (plans.empty()) {
    const std::pair<const char*, PlannerResult> results[] = {
        {"dapple", plan_dapple(profile, cluster, global_batch, planner)},
        {"pipedream", plan_pipedream(profile, cluster, global_batch, planner)},
        {"gpipe", plan_gpipe(profile, cluster, global_batch, planner)},
        {overlap ? "dp-overlap" : "dp", plan_data_parallel(profile, cluster, global_batch, overlap, planner)}};
    for (const auto& [name, result] : results)
      if (result.found) plans.emplace_back(name, result.plan);
  }
  for (const auto& [name, plan] : plans) {
    const Partition partition = plan_partition(plan);
    ++best.evaluated;
    PartitionEvaluation e;
    try {
      e = score_plan(profile, cluster, plan, options.cost);
    } catch (const loom::Error&) {
      continue;
    }
    if (!e.fits || !beats(e.simulation.step_ms, best_ms)) continue;
    keep(best, best_ms, partition, std::move(e), name);
  }
}

}  // namespace

std::vector<schedule::ScheduleKind> joint_kinds() {
  std::vector<schedule::ScheduleKind> kinds;
  for (const schedule::ScheduleKindRow& row : schedule::schedule_kind_rows())
    if (!row.asynchronous) kinds.push_back(row.kind);
  return kinds;
}

int joint_chunks(schedule::ScheduleKind kind) { return schedule::is_multi_chunk(kind) ? 2 : 1; }

namespace {

// One (kind, stage count, M) of the joint search, and a step none of its plans beats (0: not known yet).
struct Combination {
  schedule::ScheduleKind kind;
  int stages, microbatches;
  double bound_ms = 0;
};

// The bytes a tie can take off a stage (the search's memory bound subtracts them).
double tie_slack(const Profile& profile, const CostOptions& cost) {
  double slack = 0;
  for (const LayerTie& tie : profile.ties) slack += tie.bytes * (1 + cost.optimizer_state_factor);
  return slack;
}

// The cost options the search's bounds use: ZeRO-1 when the search may turn it on (the least bytes).
CostOptions bound_cost(const JointOptions& options) {
  CostOptions cost = options.cost;
  cost.zero = options.cost.zero || options.search_zero;
  return cost;
}

// Each micro-batch count's suffix bound (suffix_bound.h), made when first asked for; none where its
// table would take too long (beyond ~2^28 steps: larger clusters and models).
class SuffixBounds {
 public:
  SuffixBounds(const Profile& profile, const Cluster& cluster, int global_batch, const JointOptions& options)
      : profile_(profile), cluster_(cluster), global_batch_(global_batch), cost_(bound_cost(options)),
        slack_(tie_slack(profile, options.cost)), stages_(std::min(cluster.devices(), profile.size())) {}

  const detail::SuffixBound* at(int microbatches) {
    constexpr double kMostSteps = 1 << 28;
    if (detail::suffix_bound_steps(profile_.size(), cluster_.devices(), stages_) > kMostSteps) return nullptr;
    auto& table = tables_[microbatches];
    if (!table)
      table = std::make_unique<detail::SuffixBound>(profile_, cluster_, global_batch_ / microbatches, microbatches,
                                                    cost_, slack_, stages_);
    return table.get();
  }

 private:
  const Profile& profile_;
  const Cluster& cluster_;
  int global_batch_;
  CostOptions cost_;
  double slack_;
  int stages_;
  std::map<int, std::unique_ptr<detail::SuffixBound>> tables_;
};

enum class Searched { whole, budget_hit, out_of_time };

// Searches one combination's replicas and cuts (CutSearch), at most `node_budget` nodes (0: all).
// `suffix`: the micro-batch count's suffix bound, if made; `bound_ms` is set to a step no plan of
// the combination beats (0 when unknown), and a combination bounded above the cutoff is not
// searched.
Searched search_combination(const Profile& profile, const Cluster& cluster, int global_batch,
                            const JointOptions& options, const Combination& c, long node_budget,
                            const detail::SuffixBound* suffix, Clock::time_point deadline, JointResult& best,
                            double& best_ms, double& closest_excess, double& bound_ms) {
  bound_ms = 0;
  const int v = joint_chunks(c.kind);
  schedule::Schedule sched;
  try {
    sched = schedule::make_schedule(c.kind, {std::string(schedule::schedule_kind_name(c.kind)), c.stages,
                                             c.microbatches, v, 3, {}});
  } catch (const loom::Error&) {
    return Searched::whole;  // sizes the kind refuses
  }
  for (int k = 0; k < c.stages; ++k)  // stages take their devices in order at their first chunk
    LOOM_CHECK(sched.stage_of(k) == k, "joint search: virtual stage ", k, " is not stage ", k);
  const auto count = static_cast<std::size_t>(c.stages);
  CutSearch search{profile, cluster, options, sched,
                   {c.kind, v, c.microbatches, global_batch, std::vector<std::pair<int, int>>(count * v),
                    std::vector<int>(count, 0), {}},
                   global_batch / c.microbatches, cluster.devices(), std::vector<int>(count, 0),
                   std::vector<LinearCost>(count), std::vector<double>(count, 0.0), std::vector<double>(count, 0.0),
                   {}, {}, {}, {}, {}, {}, best, closest_excess, best_ms, deadline};
  search.tie_slack = tie_slack(profile, options.cost);
  search.bound_cost = bound_cost(options);
  search.node_budget = node_budget;
  search.read_schedule();
  if (v == 1) search.suffix = suffix;
  bound_ms = search.combination_bound();
  if (options.prune && bound_ms > search.cutoff()) return Searched::whole;
  search.cut(0, 0);
  best_ms = search.best_ms;
  best.nodes += search.nodes;
  if (!search.stopped) return Searched::whole;
  return search.budget_hit ? Searched::budget_hit : Searched::out_of_time;
}

}  // namespace

double combination_bound_ms(const Profile& profile, const Cluster& cluster, int global_batch, int microbatches) {
  const int rows = global_batch / microbatches;
  // The devices' compute: a stage of R replicas is busy at least M · ceil(b / R) rows at its layers'
  // cheapest cost per row, so Σ_s R_s · busy_s ≥ global batch · Σ_l (cheapest per row), over at most
  // D devices. The cheapest per row of a layer lies at 1 row, b rows or a measured size between
  // (costs are linear between measurements and proportional outside them).
  double per_row = 0;
  for (int l = 0; l < profile.size(); ++l) {
    std::vector<double> sizes = {1.0, static_cast<double>(rows), profile.microbatch};
    for (const Measurement& m : profile.layers[static_cast<std::size_t>(l)].extra) sizes.push_back(m.microbatch);
    double cheapest = std::numeric_limits<double>::infinity();
    for (const double r : sizes) {
      if (r < 1 || r > rows) continue;
      const LayerCost c = profile.cost_at(l, r);  // a backward split into BI and BW may cost less whole
      cheapest = std::min(cheapest, (c.forward_ms + std::min(c.backward_ms, c.input_ms() + c.weight_ms())) / r);
    }
    per_row += cheapest;
  }
  return static_cast<double>(global_batch) * per_row / cluster.devices();
}

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
  SuffixBounds suffix_bounds(profile, cluster, global_batch, options);
  std::vector<Combination> pending;
  for (const schedule::ScheduleKind kind : options.kinds.empty() ? joint_kinds() : options.kinds)
    for (int stages = 1; stages <= devices && stages * joint_chunks(kind) <= profile.size(); ++stages)
      for (const int m : microbatches) pending.push_back({kind, stages, m});
  // A combination not visited yet is bounded by its micro-batch count's compute bound and, for a
  // single-chunk kind, by its suffix bound's head form.
  const auto bound_of = [&](const Combination& c) {
    double bound = std::max(c.bound_ms, combination_bound_ms(profile, cluster, global_batch, c.microbatches));
    const detail::SuffixBound* suffix = joint_chunks(c.kind) == 1 ? suffix_bounds.at(c.microbatches) : nullptr;
    if (suffix != nullptr) bound = std::max(bound, suffix->head(c.stages, 0, devices));
    return bound;
  };
  // Under a time limit, two passes (JointOptions::first_pass_nodes); the second searches again,
  // whole, the combinations the first did not finish.
  const long first_pass_nodes = options.time_limit_s > 0 ? std::max(options.first_pass_nodes, 0L) : 0;
  for (const long budget : {first_pass_nodes, 0L}) {
    std::vector<Combination> unfinished;
    for (Combination& c : pending) {
      const Searched searched =
          search_combination(profile, cluster, global_batch, options, c, budget, suffix_bounds.at(c.microbatches),
                             deadline, best, best_ms, closest_excess, c.bound_ms);
      if (searched == Searched::out_of_time) {
        best.search = "time-limited";
        if (best.found) best.why_none.clear();
        // This combination, the rest of this pass and what an earlier pass left are not finished.
        best.lower_bound_ms = best_ms;
        bool after = false;
        for (const std::vector<Combination>* list : {&pending, &unfinished})
          for (const Combination& u : *list) {
            after = after || &u == &c;
            if (list == &unfinished || after)
              best.lower_bound_ms = std::min(best.lower_bound_ms, bound_of(u));
          }
        return best;
      }
      if (searched == Searched::budget_hit) unfinished.push_back(c);
    }
    pending = std::move(unfinished);
    if (budget == 0) break;
  }
  if (best.found) best.why_none.clear();
  best.lower_bound_ms = best_ms;
  return best;
}

}  // namespace loom::planner
