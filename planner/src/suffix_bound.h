// The joint search's bound on the stages still to cut (joint_planner.cpp), for the single-chunk
// kinds: the least, over every way to cut layers l.. into k stages on the last d devices, of the
// slowest of those stages' lower bounds (its micro-batches' forwards and backwards, its allreduce
// where not overlapped, behind the forwards of one micro-batch through the stages before it), by
// dynamic programming over (k, l, d) for one micro-batch count. A stage whose weights, gradients and
// optimizer state exceed a device's memory is no way to cut. The search adds the time before the
// first of those stages and prunes a prefix whose bound reaches its best plan; the whole table's
// (S, 0, D) bounds a (kind, S, M) before it is searched.
#pragma once

#include <vector>

#include <loom/planner/cluster.h>
#include <loom/planner/cost_model.h>
#include <loom/planner/profile.h>

namespace loom::planner::detail {

class SuffixBound {
 public:
  // `max_stages`: the most stages any search asks about; `tie_slack`: the bytes a tie can take off
  // a stage (as the search's memory bound). The table has max_stages x layers x devices entries and
  // takes about that times layers x devices steps: callers skip it when that is too many.
  SuffixBound(const Profile& profile, const Cluster& cluster, int rows_per_microbatch, int microbatches,
              const CostOptions& bound_cost, double tie_slack, int max_stages);

  // Two bounds of the step from the first of the k stages' start: by the head (the forwards before
  // a stage, then its busy time: compute and allreduce unless overlapped) and, for kinds whose
  // stages end with the backward of their first micro-batch, by head and tail (the forwards before
  // a stage, its compute, the backwards after it back down). +inf where no cut fits.
  double head(int stages, int first_layer, int devices) const { return head_[index(stages, first_layer, devices)]; }
  double head_and_tail(int stages, int first_layer, int devices) const {
    return tail_[index(stages, first_layer, devices)];
  }
  int max_stages() const { return max_stages_; }

 private:
  std::size_t index(int stages, int first_layer, int devices) const {
    return (static_cast<std::size_t>(stages) * (layers_ + 1) + first_layer) * (devices_ + 1) + devices;
  }
  int layers_, devices_, max_stages_;
  std::vector<double> head_, tail_;
};

// About how many steps SuffixBound's table takes for these sizes (callers skip it above a budget).
double suffix_bound_steps(int layers, int devices, int max_stages);

}  // namespace loom::planner::detail
