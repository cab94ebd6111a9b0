// `loom plan --planner joint --explain`: why the joint search chose its plan. The search runs again
// once per schedule kind, on that kind alone and without the other planners' seeds: its best plan
// without recomputation, or, where none fits, with recomputation searched per stage. Each row gives
// the predicted step (the one model), M, the cuts, per-stage peak memory, what each stage recomputes,
// ZeRO-1, and why the chosen plan won over it (faster by N%, or it does not fit: which stage, by how
// many bytes); as a table after the chosen plan, or as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <loom/planner/cluster.h>
#include <loom/planner/joint_planner.h>
#include <loom/planner/profile.h>

namespace loom::apps {

// Rows as JSON objects, one per kind (`chosen_ms`: the chosen plan's step, to say how much faster it is).
nlohmann::json explain_kinds(const planner::Profile& profile, const planner::Cluster& cluster, int global_batch,
                             const planner::JointOptions& options, double chosen_ms);
void print_explanation(const nlohmann::json& rows);

}  // namespace loom::apps
