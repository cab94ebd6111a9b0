// The plan file (DESIGN.md "Plan file"): JSON written by `loom plan --out`, read by
// `loom train --plan`. Version 3 (written; versions 1 and 2 still read):
//
//   {"format": "loom-plan", "version": 3, "model": "bert-48", "planner": "joint",
//    "global_batch": 128, "microbatches": 16, "microbatch_size": 8, "schedule": "zb-v",
//    "chunks": 2, "zero": 0, "placement": "", "overlap_allreduce": false,
//    "cluster": {"nodes": 2, "devices_per_node": 8}, "tensor_parallel": 1,
//    "stages": [{"layers": [[0, 11], [36, 47]], "replicas": 8, "ranks": [0, 1, ...],
//                "devices": [{"node": 0, "device": 0}, ...], "recompute": [0, 1, 2],
//                "predicted_peak_bytes": 6.1e9}, ...],
//    "predicted_step_ms": 512.3, "peak_memory_bytes": 1.2e10,
//    "assumptions": {"optimizer": "adam", "optimizer_state_factor": 2, "precision": "fp32",
//                    "cluster": "A", "device_memory_bytes": 1.6e10, "profile": "bert.json",
//                    "profile_fingerprint": "9f0c3e51a2b4d6e8", "loom_version": "loom 0.55.0 ..."}}
//
// One entry per pipeline stage (rank position). "layers" lists the inclusive block range of each
// chunk the stage holds, chunk 0 first (which virtual stage a chunk is follows the schedule kind:
// looped c·S + s, or the V); "chunks" ranges each, default 2 for the multi-chunk kinds, else 1.
// "recompute": the global block indices whose activations the stage recomputes in backward (empty:
// none). "predicted_peak_bytes": what one of its ranks holds at most, as the run's
// peak_bytes_by_stage total will show it. "zero": 1 runs ZeRO-1. "schedule": any kind.
// Predictions (predicted_step_ms, peak_memory_bytes, predicted_peak_bytes) are the one model's
// (plan_score.h) under "assumptions" (PlanAssumptions). "tensor_parallel": ranks per stage replica
// in a tensor-parallel group, reserved: 1 until the runtime runs it. Version 2 has neither field
// (and may have "simulated_step_ms", read and ignored).
// Version 1 has one [first, last] per stage, schedule dapple or gpipe, none of chunks, zero,
// recompute or predicted_peak_bytes. "ranks" are MPI ranks (node * devices_per_node + device);
// replica i of a stage runs on ranks[i].
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <loom/planner/cluster.h>
#include <loom/planner/plan.h>

namespace loom::planner {

nlohmann::json plan_to_json(const Plan& plan, const Cluster& cluster);
void write_plan(const Plan& plan, const Cluster& cluster, const std::string& path);

// Reads and checks a plan file; errors name the file and the line (syntax) or the field.
Plan read_plan(const std::string& path);
Plan parse_plan(const std::string& text, const std::string& source);

}  // namespace loom::planner
