// The single-chunk suffix bound (see suffix_bound.h).
#include "suffix_bound.h"

#include <algorithm>
#include <limits>

namespace loom::planner::detail {

namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

// Per replica count r: prefix sums over layers of one micro-batch's forward and backward at
// ceil(b / r) rows, and of parameter bytes; the allreduce of each run of devices.
struct StageCosts {
  int layers, devices, rows;
  std::vector<std::vector<double>> forward, backward;  // [r][l]: layers 0..l−1
  std::vector<double> weights;
  std::vector<std::vector<LinearCost>> allreduce;      // [first device][r]

  StageCosts(const Profile& profile, const Cluster& cluster, int rows_per_microbatch)
      : layers(profile.size()), devices(cluster.devices()), rows(rows_per_microbatch),
        forward(static_cast<std::size_t>(std::min(devices, rows)) + 1),
        backward(forward.size()), weights(static_cast<std::size_t>(layers) + 1, 0.0),
        allreduce(static_cast<std::size_t>(devices)) {
    for (int r = 1; r < static_cast<int>(forward.size()); ++r) {
      auto& f = forward[static_cast<std::size_t>(r)];
      auto& b = backward[static_cast<std::size_t>(r)];
      f.assign(static_cast<std::size_t>(layers) + 1, 0.0);
      b.assign(f.size(), 0.0);
      const RangeCost none{};
      for (int l = 0; l < layers; ++l) {
        RangeCost one = none;
        extend_range_cost(one, profile, l, ceil_div(rows, r));
        f[static_cast<std::size_t>(l) + 1] = f[static_cast<std::size_t>(l)] + one.forward_ms;
        b[static_cast<std::size_t>(l) + 1] = b[static_cast<std::size_t>(l)] + one.backward_ms;
      }
    }
    for (int l = 0; l < layers; ++l)
      weights[static_cast<std::size_t>(l) + 1] =
          weights[static_cast<std::size_t>(l)] + profile.layers[static_cast<std::size_t>(l)].parameter_bytes;
    for (int first = 0; first < devices; ++first) {
      std::vector<int> group;
      allreduce[static_cast<std::size_t>(first)].resize(static_cast<std::size_t>(devices - first) + 1);
      for (int r = 1; first + r <= devices; ++r) {
        group.push_back(first + r - 1);
        allreduce[static_cast<std::size_t>(first)][static_cast<std::size_t>(r)] = allreduce_cost(cluster, group);
      }
    }
  }
};

}  // namespace

double suffix_bound_steps(int layers, int devices, int max_stages) {
  return static_cast<double>(max_stages) * layers * devices * layers * devices;
}

SuffixBound::SuffixBound(const Profile& profile, const Cluster& cluster, int rows_per_microbatch, int microbatches,
                         const CostOptions& bound_cost, double tie_slack, int max_stages)
    : layers_(profile.size()), devices_(cluster.devices()), max_stages_(max_stages) {
  const StageCosts costs(profile, cluster, rows_per_microbatch);
  const std::size_t size = index(max_stages_ + 1, 0, 0);
  head_.assign(size, kNone);
  tail_.assign(size, kNone);
  const int most_replicas = std::min(devices_, rows_per_microbatch);
  for (int k = 1; k <= max_stages_; ++k)
    for (int l = layers_ - k; l >= 0; --l)
      for (int d = k; d <= devices_; ++d) {
        const int first_device = devices_ - d;
        double best_head = kNone, best_tail = kNone;
        // The first stage takes layers l..m on r devices; the last takes every layer and device left.
        const int last_m = k == 1 ? layers_ - 1 : layers_ - k;
        for (int r = k == 1 ? d : 1; r <= std::min(d - (k - 1), most_replicas); ++r) {
          const auto& f = costs.forward[static_cast<std::size_t>(r)];
          const auto& b = costs.backward[static_cast<std::size_t>(r)];
          const LinearCost& ar = costs.allreduce[static_cast<std::size_t>(first_device)][static_cast<std::size_t>(r)];
          for (int m = k == 1 ? layers_ - 1 : l; m <= last_m; ++m) {
            const auto end = static_cast<std::size_t>(m) + 1, begin = static_cast<std::size_t>(l);
            const double weights = costs.weights[end] - costs.weights[begin];
            if (state_bytes(weights, r, bound_cost) - tie_slack > cluster.device_memory) break;  // longer: more bytes
            const double forward = f[end] - f[begin], backward = b[end] - b[begin];
            const double compute = microbatches * (forward + backward);
            const double busy = compute + (bound_cost.overlap_allreduce ? 0.0 : ar.at(weights));
            if (compute >= best_tail && busy >= best_head) break;  // longer: slower
            double head = busy, tail = compute;
            if (k > 1) {
              head = std::max(head, forward + head_[index(k - 1, m + 1, d - r)]);
              tail = std::max(tail, forward + backward + tail_[index(k - 1, m + 1, d - r)]);
            }
            best_head = std::min(best_head, head);
            best_tail = std::min(best_tail, tail);
          }
        }
        head_[index(k, l, d)] = best_head;
        tail_[index(k, l, d)] = best_tail;
      }
}

}  // namespace loom::planner::detail
