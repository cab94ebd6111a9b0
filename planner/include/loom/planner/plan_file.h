// The plan file (DESIGN.md "Plan file"): JSON written by `loom plan --out`, read by
// `loom train --plan`.
//
//   {"format": "loom-plan", "version": 1, "model": "bert-48", "planner": "dapple",
//    "global_batch": 128, "microbatches": 16, "microbatch_size": 8, "schedule": "dapple",
//    "placement": "fresh-first", "overlap_allreduce": false,
//    "cluster": {"nodes": 2, "devices_per_node": 8},
//    "stages": [{"layers": [0, 23], "replicas": 8, "ranks": [0, 1, ...],
//                "devices": [{"node": 0, "device": 0}, ...]}, ...],
//    "predicted_step_ms": 512.3, "simulated_step_ms": 530.1, "peak_memory_bytes": 1.2e10}
//
// "ranks" are MPI ranks (node * devices_per_node + device); replica i of a stage runs on ranks[i].
// "layers" are inclusive indices into the model's block chain (the profile's layers).
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
