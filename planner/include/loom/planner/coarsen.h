// Coarsening: a chain too fine for an exact search is planned as a shorter chain of groups of
// adjacent layers, each group of about equal compute (forward + backward at the profiled size).
//
// A group's costs are exact sums: times, kept activations and parameters add up; the bytes that
// cross the cut after a group are those after its last layer; measurements at other micro-batch
// sizes are merged at the union of the sizes (each layer's cost is piecewise linear in the size,
// so their sum is too, with those breakpoints). A plan of the groups is therefore a plan of the
// original chain, with cuts only between groups, and the cost model scores it the same on both
// (except for the layer-by-layer allreduce overlap, which sees groups as single layers).
#pragma once

#include <vector>

#include <loom/planner/plan.h>
#include <loom/planner/profile.h>

namespace loom::planner {

struct Coarsening {
  Profile profile;                // the chain of groups
  std::vector<int> last_layers;   // group g ends at layer last_layers[g] of the original chain
  int original_layers() const { return last_layers.empty() ? 0 : last_layers.back() + 1; }
};

// At most `groups` groups (>= 1); a profile with no more layers than that comes back unchanged.
Coarsening coarsen(const Profile& profile, int groups);

// The plan of the groups as a plan of the original chain (layer ranges renumbered).
Plan refine(const Plan& coarse, const Coarsening& coarsening);

}  // namespace loom::planner
