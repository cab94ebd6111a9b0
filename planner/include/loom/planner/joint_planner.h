// The joint search (issue 29, part): the partition into stages (contiguous, uneven), replicas per
// stage, the schedule kind (every synchronous kind, the multi-chunk ones with v = 2) and the
// micro-batch count M, minimising the simulated step time of evaluate_partition() — one cost model
// for every kind — under every device's memory (the cluster's device_memory). Every plan uses all
// of the cluster's devices; stage p's replicas take the next R_p devices in order.
//
// The search is exact for that model: for each (kind, stage count, M) it walks, depth first, the
// virtual stages in order, choosing a stage's replicas at its first chunk (stages take devices in
// order, so a prefix fixes its stages' placement) and each virtual stage's layer range, and drops a
// prefix — with every replica vector and cut that extends it — when a lower bound already reaches
// the best feasible step time found so far, or when a stage's weights, gradients and optimizer
// state alone exceed device memory. The bounds: a stage computes every forward and backward of its
// chunks one after another, then its gradient allreduce, so the step lasts at least M · Σ (F + B) +
// AR over the chunks it holds (those cut so far), plus one micro-batch's forwards through the
// virtual stages before its first chunk (nothing reaches it earlier) and, where its program ends
// with a whole backward of its first chunk (gpipe, dapple, looped), that micro-batch's backwards
// back down to stage 0; at least the average of M · Σ (F + B) over the stages (the layers not cut
// yet counted at the fewest rows any stage can still have); the devices' time (each stage's R
// devices are busy at most the best step less its head, and the layers not cut need at least
// M · Σ min over R of R · (F + B) at ⌈b / R⌉ rows); for the single-chunk kinds, the stages not cut
// yet at least their suffix bound (planner/src/suffix_bound.h: a dynamic programme over stages,
// first layer and devices left, per M), whose value for all S stages skips a whole (kind, S, M);
// and for the multi-chunk kinds, once every stage has its replicas, the second half's chunks must
// be able to take the layers left within the best step and the cap. Micro-batch counts are tried from
// the most down (small bubbles first find good plans early), after the seeds (JointOptions::seed).
// A candidate that does not fit is fitted by ZeRO-1 where a stage is replicated, then by per-stage
// recomputation where it can (fit_by_recomputation, recomputation.h): neither changes the
// simulated step but recomputation's added forwards, so the result stays exact. Not searched yet:
// placement policies.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <loom/planner/partition_evaluation.h>
#include <loom/planner/plan.h>

namespace loom::planner {

struct JointOptions {
  CostOptions cost;
  std::vector<schedule::ScheduleKind> kinds;  // empty: every synchronous kind (joint_kinds())
  std::vector<int> microbatch_counts;         // empty: every divisor of the global batch
  bool prune = true;                          // false: evaluate every candidate (for the tests)
  double time_limit_s = 0;                    // > 0: stop then with the best plan so far
  // Under a time limit the search takes two passes: first every (kind, stage count, M) gets at
  // most this many nodes (partial candidates), so that no kind or stage count goes unsearched
  // because an earlier one's tree filled the time, and the plans found bound the rest; then the
  // combinations the first pass did not finish are searched whole. (Without a limit: one pass.)
  // A simulated candidate counts as 64 nodes (CutSearch::kSimulationNodes), so the budget shares
  // out time more than nodes: 2^14 nodes are a few ms of search here.
  long first_pass_nodes = 1 << 14;
  // The other planners' plans (the DAPPLE and PipeDream planners', the GPipe baseline's, data parallelism's, under
  // the same allreduce assumption, cost.overlap_allreduce) are simulated first with their own
  // placement: the best that fits is the first incumbent, so the joint plan is never slower than
  // theirs and their step time bounds the search from the start.
  bool seed = true;
  // The seeds' plans when the caller has them already (`loom plan --planner all`): these instead
  // of running the planners again, each with the name of the planner that made it.
  std::vector<std::pair<std::string, Plan>> seed_plans;
  // A candidate over some device's memory is fitted by recomputation per stage where it can
  // (recomputation.h: none, all or a subset of each stage's blocks).
  bool recompute = true;
  // A candidate over the cap is tried under ZeRO-1 first (Partition::zero: a stage's replicas
  // share out its optimizer state; the model times it as the allreduce it replaces), then
  // recomputed where it still does not fit.
  bool search_zero = true;
};

struct JointResult {
  bool found = false;
  Partition partition;           // the fastest feasible one
  PartitionEvaluation evaluation;
  long evaluated = 0;            // candidates run through the simulator (seeds included)
  long nodes = 0;                // partial candidates the search visited (replica and cut choices)
  std::string seeded_from;       // the planner whose plan is the result, when no candidate beat it
  std::string search = "exact";  // or "time-limited"
  // No plan of the search's space (nor a seed) is faster than this: the result's own step when the
  // search finished; when it was stopped, the least of that and, over each (kind, S, M) it did not
  // finish, a bound no plan of it can beat (combination_bound_ms at its M, and for a single-chunk
  // kind its suffix bound). +inf when nothing was found and the search finished.
  double lower_bound_ms = 0;
  // When nothing fits: of the candidates simulated, the one closest to fitting (which stage, by
  // how many bytes), or that every cut put weights, gradients and optimizer state over the cap.
  std::string why_none;
};

// A lower bound of the one model's step for every plan with `microbatches` micro-batches on the
// cluster's devices, whatever its kind, stages, cuts, replicas, recomputation and ZeRO-1: a step lasts
// at least its busiest stage's compute, and a stage of R replicas computes ceil(b / R) rows of each
// micro-batch, so the devices together compute the global batch at no less than each layer's
// cheapest cost per row (over 1 row, b rows and the measured sizes between).
double combination_bound_ms(const Profile& profile, const Cluster& cluster, int global_batch, int microbatches);

// The synchronous kinds the joint search tries, with their chunk counts.
std::vector<schedule::ScheduleKind> joint_kinds();
int joint_chunks(schedule::ScheduleKind kind);

JointResult plan_joint(const Profile& profile, const Cluster& cluster, int global_batch,
                       const JointOptions& options = {});

}  // namespace loom::planner
