// Config checks and stage partitions (see run_setup.h).
#include "run_setup.h"

#include <cmath>

#include <loom/comm/parallel_layout.h>
#include <loom/comm/partition.h>
#include <loom/core/error.h>
#include <loom/runtime/loss_scaler.h>
#include <loom/runtime/precision.h>
#include <loom/schedule/schedule_kind.h>

namespace loom::runtime::detail {

OptimizerConfig optimizer_config(const TrainerConfig& o) {
  return {o.optimizer, o.lr, o.momentum, o.weight_decay, o.lr_schedule, o.warmup_steps, o.clip_norm};
}

void validate_config(const TrainerConfig& o) {
  LOOM_CHECK((o.steps > 0) != (o.epochs > 0), "give exactly one of --steps K or --epochs E");
  LOOM_CHECK(o.steps >= 0 && o.steps <= kMaxSteps, "--steps must be in [1, ", kMaxSteps, "], got ", o.steps);
  LOOM_CHECK(o.epochs >= 0 && o.epochs <= kMaxEpochs, "--epochs must be in [1, ", kMaxEpochs, "], got ", o.epochs);
  LOOM_CHECK(o.threads >= 0 && o.threads <= kMaxThreads, "--threads must be 0 (automatic) or in [1, ", kMaxThreads,
             "], got ", o.threads);
  validate(optimizer_config(o));
  LOOM_CHECK(std::isfinite(o.bucket_mb) && o.bucket_mb > 0 && o.bucket_mb <= 1 << 16,
             "--bucket-mb must be in (0, 65536], got ", o.bucket_mb);
  LOOM_CHECK(o.global_batch >= 1, "--global-batch must be at least 1, got ", o.global_batch);
  LOOM_CHECK(o.checkpoint_every >= 0, "--checkpoint-every must be at least 0, got ", o.checkpoint_every);
  LOOM_CHECK(o.checkpoint_every == 0 || !o.checkpoint.empty(), "--checkpoint-every needs --checkpoint DIR");
  LOOM_CHECK(o.keep_checkpoints >= 1 && o.keep_checkpoints <= 1000000, "--keep-checkpoints must be in [1, 1000000], got ",
             o.keep_checkpoints);
  LOOM_CHECK(o.plan.empty() || o.schedule.empty(), "--schedule ", o.schedule, " and --plan ", o.plan,
             " do not go together: the plan names its schedule (edit the plan, or drop --plan)");
  if (!o.schedule.empty()) schedule::parse_schedule_kind(o.schedule);
  parse_precision(o.precision);
  validate(LossScalerOptions{o.loss_scale, o.loss_scale_window});
}

StagePartition partition_from_config(const TrainerConfig& o, const ModelSpec& spec, int world, int chunks) {
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
  for (int s = 0; s < p.stages; ++s) {
    const planner::StagePlan& stage = plan.stages[s];
    LOOM_CHECK(stage.first_layer == expected_first && stage.last_layer >= stage.first_layer, path, ": stage ", s,
               " covers layers [", stage.first_layer, ", ", stage.last_layer, "], expected it to start at ",
               expected_first);
    p.blocks.emplace_back(stage.first_layer, stage.last_layer + 1);
    expected_first = stage.last_layer + 1;
    for (int r : stage.devices)
      LOOM_CHECK(r >= 0 && r < world, path, ": stage ", s, " uses rank ", r, " but mpirun started ", world, " ranks");
    p.ranks.push_back(stage.devices);
  }
  LOOM_CHECK(expected_first == spec.blocks(), path, ": the plan covers ", expected_first, " layers but model ",
             spec.name, " has ", spec.blocks(), " blocks (was the plan made for another model or size?)");
  int used = 0;
  for (const auto& r : p.ranks) used += static_cast<int>(r.size());
  LOOM_CHECK(used == world, path, ": the plan uses ", used, " ranks but mpirun started ", world);
  return p;
}

}  // namespace loom::runtime::detail
