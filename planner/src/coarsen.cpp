// Coarsening a layer chain into groups of about equal compute (see coarsen.h).
#include <loom/planner/coarsen.h>

#include <algorithm>

#include <loom/base/error.h>

namespace loom::planner {

namespace {

// Cuts where the compute prefix first reaches each g/groups of the total, so every group is
// non-empty and no group holds much more than its share plus one layer. O(layers).
std::vector<int> equal_work_cuts(const Profile& profile, int groups) {
  const int n = profile.size();
  std::vector<double> prefix(n + 1, 0);
  for (int l = 0; l < n; ++l)
    prefix[l + 1] = prefix[l] + profile.layers[l].cost.forward_ms + profile.layers[l].cost.backward_ms;
  std::vector<int> last;
  int next = 0;  // first layer of the group being built
  for (int g = 1; g < groups; ++g) {
    const double target = prefix[n] * g / groups;
    int end = next;  // its last layer: at least one layer, leaving one for each later group
    while (end + 1 < n - (groups - g) && prefix[end + 1] < target) ++end;
    last.push_back(end);
    next = end + 1;
  }
  last.push_back(n - 1);
  return last;
}

LayerCost add(LayerCost sum, const LayerCost& cost) {
  sum.forward_ms += cost.forward_ms;
  sum.backward_ms += cost.backward_ms;
  sum.activation_bytes += cost.activation_bytes;
  sum.boundary_bytes = cost.boundary_bytes;  // the cut after the group is the cut after its last layer
  return sum;
}

LayerProfile merge(const Profile& profile, int first, int last) {
  LayerProfile group;
  group.name = profile.layers[first].name + (first == last ? "" : " .. " + profile.layers[last].name);
  std::vector<double> sizes;
  for (int l = first; l <= last; ++l) {
    group.cost = add(group.cost, profile.layers[l].cost);
    group.parameter_bytes += profile.layers[l].parameter_bytes;
    for (const Measurement& m : profile.layers[l].extra) sizes.push_back(m.microbatch);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (double size : sizes) {
    if (size == profile.microbatch) continue;
    Measurement point{size, {}};
    for (int l = first; l <= last; ++l) point.cost = add(point.cost, profile.cost_at(l, size));
    group.extra.push_back(point);
  }
  return group;
}

}  // namespace

Coarsening coarsen(const Profile& profile, int groups) {
  if (groups < 1) LOOM_THROW("coarsen: at least one group, got ", groups);
  Coarsening out;
  out.profile = profile;
  if (profile.size() <= groups) {
    for (int l = 0; l < profile.size(); ++l) out.last_layers.push_back(l);
    return out;
  }
  out.last_layers = equal_work_cuts(profile, groups);
  out.profile.layers.clear();
  for (std::size_t g = 0, first = 0; g < out.last_layers.size(); first = out.last_layers[g] + 1, ++g)
    out.profile.layers.push_back(merge(profile, static_cast<int>(first), out.last_layers[g]));
  return out;
}

Plan refine(const Plan& coarse, const Coarsening& coarsening) {
  Plan plan = coarse;
  const int groups = static_cast<int>(coarsening.last_layers.size());
  for (StagePlan& stage : plan.stages) {
    if (stage.first_layer < 0 || stage.last_layer >= groups || stage.first_layer > stage.last_layer)
      LOOM_THROW("refine: stage layers ", stage.first_layer, "-", stage.last_layer, " are not groups of 0..",
                   groups - 1);
    stage.first_layer = stage.first_layer == 0 ? 0 : coarsening.last_layers[stage.first_layer - 1] + 1;
    stage.last_layer = coarsening.last_layers[stage.last_layer];
  }
  return plan;
}

}  // namespace loom::planner
