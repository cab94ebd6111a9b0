// `loom plan --planner joint --explain`: the joint search once per schedule kind and recomputation
// choice (none; searched per stage), so that a user sees, for each, its best plan (predicted step,
// M, cuts, per-stage peak memory, the layers each stage recomputes) or why none fits (the closest
// candidate's stage and bytes over the cap).
#pragma once

#include <loom/planner/joint_planner.h>

namespace loom::apps {

void print_explanation(const planner::Profile& profile, const planner::Cluster& cluster, int global_batch,
                       const planner::JointOptions& options);

}  // namespace loom::apps
