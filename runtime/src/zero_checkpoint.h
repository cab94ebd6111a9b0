// --zero 1 checkpoints: a stage file holds every parameter and every optimizer-state tensor whole,
// as without ZeRO (so a checkpoint resumes with ZeRO on or off, at any replica count); its
// replicas gather them from their slices before replica 0 writes.
#pragma once

#include <vector>

#include <loom/layers/layer.h>
#include <loom/runtime/optimizer_step.h>
#include <loom/runtime/training_checkpoint.h>
#include <loom/runtime/zero_shard.h>

namespace loom::runtime::detail {

// Collective over the stage's replicas. `saved`: the model's parameters and buffers the file
// holds (tied copies left out). Under bf16/fp16 the parameters are the gathered fp32 masters.
StageTensors gather_stage_tensors(ZeroShard& shard, OptimizerStep& step, const std::vector<NamedParameter>& saved);

}  // namespace loom::runtime::detail
