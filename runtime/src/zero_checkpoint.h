// --zero 1 checkpoints: the stage file (replica 0's) holds every parameter whole, as without ZeRO
// (under bf16/fp16 the fp32 masters, gathered from the slices one tensor at a time); each replica
// writes its own slices of the optimizer state, each with its element range, to
// stage<s>.zero<r>.safetensors. The reader puts a tensor together from the slices that cover the
// range it wants, so a checkpoint resumes with ZeRO on or off, at any replica count or layout.
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
