// Stage partitions (see run_setup.h).
#include "run_setup.h"

#include <loom/comm/parallel_layout.h>
#include <loom/comm/partition.h>
#include <loom/core/error.h>

namespace loom::runtime::detail {

StagePartition partition_from_config(const PipelineConfig& o, const ModelSpec& spec, int world, int chunks) {
  StagePartition p;
  LOOM_CHECK(o.stages >= 1 && o.replicas >= 1, "--stages and --replicas must be at least 1");
  const std::int64_t needed = static_cast<std::int64_t>(o.stages) * o.replicas;  // no int overflow
  LOOM_CHECK(world == needed, "mpirun started ", world, " ranks but --stages ", o.stages, " x --replicas ", o.replicas,
             " needs ", needed);
  p.stages = o.stages;
  const comm::ParallelLayout layout = comm::ParallelLayout::uniform(o.stages, o.replicas);
  for (int s = 0; s < o.stages; ++s) p.ranks.push_back(layout.stage_ranks(s));
  const int virtual_stages = o.stages * chunks;
  LOOM_CHECK(spec.blocks() >= virtual_stages, "model ", spec.name, " has ", spec.blocks(), " blocks, too few for ",
             virtual_stages, chunks > 1 ? " virtual stages" : " stages",
             " (use --set to make it deeper, or fewer stages)");
  for (int v = 0; v < virtual_stages; ++v) {
    const comm::Range r = comm::even_split(spec.blocks(), virtual_stages, v);
    p.blocks.emplace_back(r.begin, r.end);
  }
  return p;
}

StagePartition partition_from_plan(const planner::Plan& plan, const std::string& path, const ModelSpec& spec, int world) {
  StagePartition p;
  p.stages = plan.stage_count();
  std::int64_t expected_first = 0;
  const std::vector<planner::LayerRange> ranges = planner::virtual_stage_layers(plan, planner::plan_schedule(plan));
  for (std::size_t v = 0; v < ranges.size(); ++v) {
    const auto [first, last] = ranges[v];
    LOOM_CHECK(first == expected_first && last >= first, path, ": virtual stage ", v, " covers layers [", first, ", ",
               last, "], expected it to start at ", expected_first);
    p.blocks.emplace_back(first, last + 1);
    expected_first = last + 1;
  }
  for (int s = 0; s < p.stages; ++s) {
    const planner::StagePlan& stage = plan.stages[static_cast<std::size_t>(s)];
    for (int r : stage.devices)
      LOOM_CHECK(r >= 0 && r < world, path, ": stage ", s, " uses rank ", r, " but mpirun started ", world, " ranks");
    p.ranks.push_back(stage.devices);
    p.recompute.emplace_back(stage.recompute.begin(), stage.recompute.end());
  }
  LOOM_CHECK(expected_first == spec.blocks(), path, ": the plan covers ", expected_first, " layers but model ",
             spec.name, " has ", spec.blocks(), " blocks (was the plan made for another model or size?)");
  int used = 0;
  for (const auto& r : p.ranks) used += static_cast<int>(r.size());
  LOOM_CHECK(used == world, path, ": the plan uses ", used, " ranks but mpirun started ", world);
  return p;
}

}  // namespace loom::runtime::detail
