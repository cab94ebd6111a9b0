// The single-chunk suffix bound (see suffix_bound.h).
#include "suffix_bound.h"

#include "layer_sums.h"

#include <algorithm>
#include <limits>

namespace loom::planner::detail {

namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

// Per replica count r: the layers' sums at ceil(b / r) rows (index r; 0 unused); the allreduce of each
// run of devices.
struct StageCosts {
  std::vector<LayerSums> sums;
  std::vector<std::vector<LinearCost>> allreduce;  // [first device][r]

  StageCosts(const Profile& profile, const Cluster& cluster, int rows_per_microbatch) {
    const int devices = cluster.devices();
    for (int r = 0; r <= std::min(devices, rows_per_microbatch); ++r)
      sums.emplace_back(profile, ceil_div(rows_per_microbatch, std::max(r, 1)));
    allreduce.resize(static_cast<std::size_t>(devices));
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
          const LayerSums& sums = costs.sums[static_cast<std::size_t>(r)];
          const LinearCost& ar = costs.allreduce[static_cast<std::size_t>(first_device)][static_cast<std::size_t>(r)];
          for (int m = k == 1 ? layers_ - 1 : l; m <= last_m; ++m) {
            const double weights = sums.weights(l, m + 1);
            if (state_bytes(weights, r, bound_cost) - tie_slack > cluster.device_memory) break;  // longer: more bytes
            const double forward = sums.forward(l, m + 1), backward = sums.backward(l, m + 1);
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
