// The three placement policies of the DAPPLE planner.
#include <loom/planner/placement.h>

#include <algorithm>
#include <numeric>

#include <loom/base/error.h>

namespace loom::planner {

const char* to_string(PlacementPolicy policy) {
  switch (policy) {
    case PlacementPolicy::FreshFirst: return "fresh-first";
    case PlacementPolicy::AppendFirst: return "append-first";
    case PlacementPolicy::ScatterFirst: return "scatter-first";
  }
  return "?";
}

PlacementPolicy parse_placement_policy(const std::string& name) {
  for (PlacementPolicy p : kAllPlacementPolicies)
    if (name == to_string(p)) return p;
  LOOM_THROW("unknown placement policy '", name, "' (fresh-first, append-first, scatter-first)");
}

int NodeUsage::free_devices() const {
  return static_cast<int>(used.size()) * devices_per_node - std::accumulate(used.begin(), used.end(), 0);
}

namespace {

// Nodes in the order a policy fills them; each is then filled as far as needed.
std::vector<int> fill_order(const NodeUsage& usage, PlacementPolicy policy) {
  const int nodes = static_cast<int>(usage.used.size()), cap = usage.devices_per_node;
  std::vector<int> fresh, partial;
  for (int n = 0; n < nodes; ++n) {
    if (usage.used[n] == 0) fresh.push_back(n);
    else if (usage.used[n] < cap) partial.push_back(n);
  }
  if (policy == PlacementPolicy::FreshFirst) {
    // Most free first, the latest node among equals.
    std::stable_sort(partial.begin(), partial.end(), [&](int a, int b) {
      return usage.used[a] != usage.used[b] ? usage.used[a] < usage.used[b] : a > b;
    });
    fresh.insert(fresh.end(), partial.begin(), partial.end());
    return fresh;
  }
  // AppendFirst: fullest first, the latest node among equals.
  std::stable_sort(partial.begin(), partial.end(), [&](int a, int b) {
    return usage.used[a] != usage.used[b] ? usage.used[a] > usage.used[b] : a > b;
  });
  partial.insert(partial.end(), fresh.begin(), fresh.end());
  return partial;
}

}  // namespace

std::vector<int> place_stage(NodeUsage& usage, int replicas, PlacementPolicy policy) {
  const int cap = usage.devices_per_node, nodes = static_cast<int>(usage.used.size());
  if (replicas < 1 || replicas > usage.free_devices())
    LOOM_THROW("cannot place ", replicas, " replicas on ", usage.free_devices(), " free devices");
  std::vector<int> devices;
  if (policy == PlacementPolicy::ScatterFirst) {
    std::vector<int> mine(nodes, 0);
    for (int k = 0; k < replicas; ++k) {
      int best = -1;
      for (int n = 0; n < nodes; ++n) {
        if (usage.used[n] == cap) continue;
        if (best < 0 || mine[n] < mine[best] || (mine[n] == mine[best] && usage.used[n] < usage.used[best]))
          best = n;
      }
      devices.push_back(best * cap + usage.used[best]);
      ++usage.used[best];
      ++mine[best];
    }
  } else {
    int left = replicas;
    for (int n : fill_order(usage, policy)) {
      while (left > 0 && usage.used[n] < cap) {
        devices.push_back(n * cap + usage.used[n]);
        ++usage.used[n];
        --left;
      }
      if (left == 0) break;
    }
  }
  std::sort(devices.begin(), devices.end());
  return devices;
}

std::vector<std::vector<int>> place_stages(int nodes, int devices_per_node, const std::vector<int>& replicas,
                                           PlacementPolicy policy) {
  NodeUsage usage(nodes, devices_per_node);
  std::vector<std::vector<int>> placement;
  for (int r : replicas) placement.push_back(place_stage(usage, r, policy));
  return placement;
}

}  // namespace loom::planner
