// Prefix sums over a profile's layers (see layer_sums.h).
#include "layer_sums.h"

namespace loom::planner::detail {

LayerSums::LayerSums(const Profile& profile, int rows)
    : forward_(static_cast<std::size_t>(profile.size()) + 1, 0.0), backward_(forward_), weights_(forward_) {
  for (int l = 0; l < profile.size(); ++l) {
    const auto i = static_cast<std::size_t>(l);
    const LayerCost c = profile.cost_at(l, rows);
    forward_[i + 1] = forward_[i] + c.forward_ms;
    backward_[i + 1] = backward_[i] + c.backward_ms;
    weights_[i + 1] = weights_[i] + profile.layers[i].parameter_bytes;
  }
}

}  // namespace loom::planner::detail
