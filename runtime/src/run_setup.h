// What the Trainer resolves before it builds anything: the split of the model's blocks into
// (virtual) stages with the ranks of each stage, from --stages x --replicas or from a plan file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <loom/models/model.h>
#include <loom/planner/plan.h>
#include <loom/runtime/trainer_config.h>

namespace loom::runtime::detail {

struct StagePartition {
  int stages = 1;                                              // physical stages S
  std::vector<std::vector<int>> ranks;                         // ranks[stage][replica]
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;  // per virtual stage: [first, last)
  std::vector<std::vector<std::int64_t>> recompute;            // per stage: blocks a plan recomputes
};

// Minibatches an asynchronous schedule runs as one window (its action lists grow with it).
inline constexpr std::int64_t kMaxAsyncWindow = std::int64_t{1} << 20;

// Stage s of S gets blocks even_split(blocks, S * chunks, v) for each of its virtual stages v.
StagePartition partition_from_config(const PipelineConfig& config, const ModelSpec& spec, int world, int chunks);
// The plan's chunk ranges in their virtual stages (planner::virtual_stage_layers: the placement
// of its schedule kind), its ranks and its per-stage recomputation.
StagePartition partition_from_plan(const planner::Plan& plan, const std::string& path, const ModelSpec& spec, int world);

}  // namespace loom::runtime::detail
