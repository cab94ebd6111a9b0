// The PipeDream planner (Narayanan et al., SOSP 2019): the hierarchical dynamic programme that
// maximises the throughput of an asynchronous pipeline, used as the baseline DAPPLE compares with.
//
// Level by level of the topology (devices in a node over the intra-node links, then nodes over
// the network), with a = the bytes crossing a cut and W the parameter bytes of a stage:
//     T(i..j, m) = (1/m) · max(Σ compute(i..j), 4(m − 1)·|W(i..j)| / (bandwidth · m))
//     A(i..j, m) = min( T(i..j, m),
//                       min over cut k and m' < m of max(A(i..k, m − m'), 2·a_k / bandwidth, T(k+1..j, m')) )
// At the first level compute is forward + backward time at the profiled batch; at the next level
// the compute of a sub-chain is its best time on one whole node, A(i..j, devices per node).
// The result is a strategy: stages of layers with replica counts. plan_pipedream then runs that
// strategy synchronously (as the DAPPLE paper does) and picks its best M with the cost model.
#pragma once

#include <vector>

#include <loom/planner/planner.h>

namespace loom::planner {

struct PipeDreamPartition {
  double objective_ms = 0;  // PipeDream's time per minibatch (its objective) at the top level
  std::vector<StagePlan> stages;  // flattened over the levels, with devices
};

PipeDreamPartition pipedream_partition(const Profile& profile, const Cluster& cluster);

// The longest chain plan_pipedream runs the programme on without coarsening it first.
int pipedream_exact_layers(const Cluster& cluster);

PlannerResult plan_pipedream(const Profile& profile, const Cluster& cluster, int global_batch,
                             const PlannerOptions& options = {});

}  // namespace loom::planner
