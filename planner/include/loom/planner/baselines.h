// The baselines the planners are compared with, scored by the same cost model.
//   Data parallelism: one stage holding every layer, replicated on every device; gradients are
//   accumulated over M micro-batches when a whole share does not fit in memory, then allreduced —
//   after the last backward, or overlapped with it bucket by bucket.
//   GPipe: S ≥ 2 stages of D / S replicas each (S dividing D), cut so that the stages' compute
//   is as even as possible, on consecutive devices, run with the GPipe schedule (all forwards,
//   then all backwards).
// Each tries every candidate M and keeps the fastest plan that fits in memory.
#pragma once

#include <loom/planner/planner.h>

namespace loom::planner {

PlannerResult plan_data_parallel(const Profile& profile, const Cluster& cluster, int global_batch, bool overlap,
                                 const PlannerOptions& options = {});

PlannerResult plan_gpipe(const Profile& profile, const Cluster& cluster, int global_batch,
                         const PlannerOptions& options = {});

}  // namespace loom::planner
