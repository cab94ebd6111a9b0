// Prefix sums over a profile's layers at one rows count, for the joint search's bounds
// (joint_planner.cpp, suffix_bound.cpp): one micro-batch's forward and backward milliseconds of
// layers [first, end) at `rows` rows, and their parameter bytes, each in O(1).
#pragma once

#include <vector>

#include <loom/planner/profile.h>

namespace loom::planner::detail {

class LayerSums {
 public:
  LayerSums(const Profile& profile, int rows);
  double forward(int first, int end) const { return at(forward_, end) - at(forward_, first); }
  double backward(int first, int end) const { return at(backward_, end) - at(backward_, first); }
  double work(int first, int end) const { return forward(first, end) + backward(first, end); }
  double weights(int first, int end) const { return at(weights_, end) - at(weights_, first); }

 private:
  static double at(const std::vector<double>& prefix, int l) { return prefix[static_cast<std::size_t>(l)]; }
  std::vector<double> forward_, backward_, weights_;  // index l: layers 0..l−1
};

}  // namespace loom::planner::detail
