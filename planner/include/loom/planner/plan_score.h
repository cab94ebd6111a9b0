// The one model every plan is scored by (issue 45). Whatever planner made a plan — the DAPPLE and
// PipeDream searches, the baselines, the joint search, a plan file — its predicted step time, bubble
// and per-stage memory come from here: the plan as a Partition (its virtual stages' layers, each
// stage's devices, recomputation, ZeRO-1, its allreduce assumption) run through
// evaluate_partition(), the per-chunk schedule simulator that planner_calibration.sh checks against
// runs. The closed form of cost_model.h stays the DAPPLE and PipeDream searches' objective (and the
// joint search's bound); no number a user sees comes from it.
#pragma once

#include <string>

#include <loom/planner/cluster.h>
#include <loom/planner/cost_model.h>
#include <loom/planner/partition_evaluation.h>
#include <loom/planner/plan.h>
#include <loom/planner/profile.h>

namespace loom::planner {

// The plan as the partition the model simulates (the plan must be valid: validate()).
Partition plan_partition(const Plan& plan);

// `plan` scored by the one model: evaluate_partition(plan_partition(plan)) with the plan's own
// allreduce assumption (Plan::overlap_allreduce, whatever `options` says) and ZeRO-1 (the plan's or
// `options`').
PartitionEvaluation score_plan(const Profile& profile, const Cluster& cluster, const Plan& plan,
                               const CostOptions& options = {});

// One device processing the whole global batch in one micro-batch, by the one model (its memory
// not checked): the reference for speedups.
double single_device_step_ms(const Profile& profile, const Cluster& cluster, int global_batch,
                             const CostOptions& options = {});

// Writes the score into the plan: predicted_step_ms, peak_memory_bytes and each stage's
// predicted_peak_bytes.
void record_score(Plan& plan, const PartitionEvaluation& score);

// A partition and its score as a plan (the joint search's result, a plan file's contents): each
// stage's chunks in chunk order, its devices, recomputation and predicted peak.
Plan partition_plan(const Partition& partition, const PartitionEvaluation& score, std::string model,
                    std::string planner);

}  // namespace loom::planner
