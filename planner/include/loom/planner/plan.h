// A hybrid plan: how many micro-batches, where the layer chain is cut into stages, and which
// devices run the replicas of each stage. Produced by every planner, scored by the cost model,
// written as the plan file that `loom train --plan` reads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <loom/schedule/schedule_kind.h>

namespace loom::planner {

// How a step is executed: one of loom's schedule kinds (schedule/schedule_kind.h). A plan carries
// one the cost model knows: dapple (synchronous 1F1B with early backward) or gpipe (all forwards,
// then all backwards). A one-stage plan is plain data parallelism with gradient accumulation.
using schedule::ScheduleKind;

// "dapple" or "gpipe"; any other name is a loom::Error.
ScheduleKind parse_plan_schedule(std::string_view name);

struct StagePlan {
  int first_layer = 0;  // inclusive
  int last_layer = 0;   // inclusive
  std::vector<int> devices;  // replica i runs on devices[i] (= MPI rank)

  int replicas() const { return static_cast<int>(devices.size()); }
  int layers() const { return last_layer - first_layer + 1; }
  friend bool operator==(const StagePlan&, const StagePlan&) = default;
};

struct Plan {
  std::string model;
  std::string planner;    // "dapple", "pipedream", "dp", "dp-overlap", "gpipe"
  std::string placement;  // the placement policy that produced it, when one did
  int global_batch = 0;
  int microbatches = 1;
  ScheduleKind schedule = ScheduleKind::dapple;
  // Gradients are allreduced layer by layer while the last backward still runs (bucketed,
  // overlapped); otherwise each stage allreduces after its last backward, as DAPPLE models it.
  bool overlap_allreduce = false;
  std::vector<StagePlan> stages;

  // Filled by the cost model (and the schedule simulator, when it scores the plan).
  double predicted_step_ms = 0;
  double simulated_step_ms = -1;  // < 0: not simulated
  double peak_memory_bytes = 0;

  int stage_count() const { return static_cast<int>(stages.size()); }
  int devices_used() const;
  int microbatch_size() const { return global_batch / microbatches; }
  // "[0-23]x8 | [24-47]x8"
  std::string strategy() const;
};

// Throws loom::Error when the stages do not cover layers 0..layers-1 in order, a device is used
// twice or lies outside 0..devices-1, M does not divide the global batch, or a stage has more
// replicas than a micro-batch has samples.
void validate(const Plan& plan, int layers, int devices);

}  // namespace loom::planner
