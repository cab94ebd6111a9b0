// Cutting a chain into consecutive groups so that the heaviest group is as light as possible
// (the "even split" of GPipe, and the DAPPLE planner's first guess).
#pragma once

#include <vector>

namespace loom::planner::detail {

// `weights[l]` per layer; returns the last layer of each of `groups` non-empty groups
// (groups <= weights.size()), minimising the largest group sum.
std::vector<int> balanced_split(const std::vector<double>& weights, int groups);

}  // namespace loom::planner::detail
