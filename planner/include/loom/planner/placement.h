// Where the replicas of a stage go. Stages are placed one after another, first stage first; each
// takes `replicas` free devices according to a policy (DAPPLE's three):
//   FreshFirst   — untouched nodes first (a stage keeps its allreduce inside nodes); if those run
//                  out, the partly used node with the most free devices (latest node on ties).
//   AppendFirst  — partly used nodes first, fullest first (latest node on ties), so neighbouring
//                  stages share nodes and their boundary stays on the fast links; then fresh nodes.
//   ScatterFirst — one replica at a time on the node holding the fewest replicas of this stage,
//                  then the most free devices, then the lowest index: the stage is spread out.
// Inside a node devices are taken in index order. A stage's device list is sorted, and replica i
// of the stage runs on devices[i] (device id = node * devices_per_node + local index = MPI rank).
//
// The policies look only at how full each node is and at node order among equally full nodes,
// so relabelling nodes (keeping that order) relabels the placement; the DAPPLE planner relies on
// this to share work between equivalent states.
#pragma once

#include <string>
#include <vector>

namespace loom::planner {

enum class PlacementPolicy { FreshFirst, AppendFirst, ScatterFirst };

const char* to_string(PlacementPolicy policy);  // "fresh-first", ...
PlacementPolicy parse_placement_policy(const std::string& name);
inline constexpr PlacementPolicy kAllPlacementPolicies[] = {PlacementPolicy::FreshFirst, PlacementPolicy::AppendFirst,
                                                            PlacementPolicy::ScatterFirst};

// Devices in use on each node, always the first `used[n]` local devices of node n.
struct NodeUsage {
  int devices_per_node = 1;
  std::vector<int> used;

  NodeUsage(int nodes, int devices_per_node) : devices_per_node(devices_per_node), used(nodes, 0) {}
  int free_devices() const;
};

// Takes `replicas` devices (replicas <= usage.free_devices()), updates `usage`, returns them sorted.
std::vector<int> place_stage(NodeUsage& usage, int replicas, PlacementPolicy policy);

// Places every stage in order on an empty cluster.
std::vector<std::vector<int>> place_stages(int nodes, int devices_per_node, const std::vector<int>& replicas,
                                           PlacementPolicy policy);

}  // namespace loom::planner
