// The DAPPLE planner: chooses the number of micro-batches M, the cuts of the layer chain into
// stages, the replicas of each stage and their placement (Fresh/Append/Scatter First), minimising
// the synchronous 1F1B step time of the cost model under the device-memory limit.
//
// The search is exact for the cost model. For each M and placement policy, a dynamic programme
// walks the chain from the last stage back to the first. The latency of the cost model splits
// into two maxima that can be built from the back,
//     P_e = max(M·(F_e + B_e), F_e + B_e + P_{e+1})    (LB of the pivot, seen from element e)
//     A_e = max(AR_e, A_{e+1} − B_e)                    (the allreduce tail, seen from e)
// with L = P_0 + A_0. A state is (first layer of the stage, how full each node already is, the
// stage's replica count); nodes are interchangeable, so usages are kept sorted. A state keeps
// every Pareto-optimal (P, A, stages-to-the-end) triple of the rest of the pipeline (the last
// decides the activations in flight, min(S − s, M), hence memory). Partial plans whose P plus
// a lower bound of the work before them exceed the best step time found so far are dropped.
//
// The closed form cannot see everything the real 1F1B order does (two neighbouring stages with a
// slow boundary between them wait on each other every other micro-batch), so with
// PlannerOptions::simulate_candidates the planner replays its best candidates in the schedule
// simulator and returns the one that runs fastest there.
#pragma once

#include <loom/planner/planner.h>

namespace loom::planner {

PlannerResult plan_dapple(const Profile& profile, const Cluster& cluster, int global_batch,
                          const PlannerOptions& options = {});

}  // namespace loom::planner
