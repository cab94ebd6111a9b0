// Refusing a run that cannot fit before anything is allocated (issue 15, "impossible model
// sizes"): from the model's meta build, each stage's parameters, gradients and optimizer state
// plus one micro-batch of its saved activations — a lower bound of what a rank of that stage
// holds — against the memory each of its ranks has on its device (the GPU's for --device cuda).
// A run from a plan is also held to the plan's predicted peak per stage (the planner's one model,
// planner/plan_score.h), which counts everything in flight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/comm/device_placement.h>

#include <loom/models/model.h>
#include <loom/layers/optimizer_kind.h>

#include <loom/runtime/run_layout.h>

namespace loom::runtime::detail {

// What one rank may use: LOOM_MEMORY_LIMIT_MB if set (tests), else its device's free bytes
// (device_memory_info) over the processes that draw on them: the ranks of its node on the same
// device for host memory and GPUs, itself alone for a sim device with its own capacity.
struct RankMemory {
  double available = 0;  // bytes; 1e300 when unknown (nothing is refused)
  std::string source;    // "LOOM_MEMORY_LIMIT_MB", "cuda:0: 80.0 GB free, shared by 2 ranks"
};
// Collective over `world`: every world rank's figures (the same table everywhere, so every rank
// reaches the same verdict).
std::vector<RankMemory> memory_by_rank(comm::Communicator& world, Device device, const comm::DevicePlacement& placement);

// Throws loom::Error naming the stage, the estimate by category, the tightest rank of the stage and
// what it has. `optimizer_state`: the parameter-sized tensors of optimizer state
// (optimizer_state_tensors); under ZeRO-1 (layout.zero) they are divided over a stage's replicas.
void check_memory_fits(int optimizer_state, const ModelSpec& spec, const RunLayout& layout,
                       const std::vector<RankMemory>& memory);

}  // namespace loom::runtime::detail
