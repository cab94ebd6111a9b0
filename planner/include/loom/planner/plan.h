// A hybrid plan: how many micro-batches, where the layer chain is cut into stages, and which
// devices run the replicas of each stage. Produced by every planner, scored by the cost model,
// written as the plan file that `loom train --plan` reads.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <loom/schedule/schedule.h>
#include <loom/schedule/schedule_kind.h>

namespace loom::planner {

// How a step is executed: one of loom's schedule kinds (schedule/schedule_kind.h). The DAPPLE and
// PipeDream planners' plans are dapple (synchronous 1F1B with early backward) or gpipe (all
// forwards, then all backwards), the kinds a version-1 plan file may name; the joint planner's may
// be any synchronous kind, multi-chunk ones with several layer ranges per stage (version 2). A
// one-stage plan is plain data parallelism with gradient accumulation.
using schedule::ScheduleKind;

// "dapple" or "gpipe" (a version-1 plan's schedule); any other name is a loom::Error.
ScheduleKind parse_plan_schedule(std::string_view name);

using LayerRange = std::pair<int, int>;  // first and last layer, inclusive

struct StagePlan {
  int first_layer = 0;  // inclusive; of chunk 0 when the plan has several chunks
  int last_layer = 0;   // inclusive
  std::vector<int> devices;  // replica i runs on devices[i] (= MPI rank)
  std::vector<LayerRange> later_chunks = {};  // chunks 1 .. Plan::chunks - 1, in chunk order
  // Global block indices whose activations this stage recomputes in backward instead of keeping
  // them (ascending, each in one of its chunks); empty: none.
  std::vector<int> recompute = {};
  double predicted_peak_bytes = -1;  // what one of its ranks holds at most; < 0: not predicted

  int replicas() const { return static_cast<int>(devices.size()); }
  int layers() const { return last_layer - first_layer + 1; }  // of chunk 0
  std::vector<LayerRange> chunk_layers() const;  // every chunk's range, chunk 0 first
  friend bool operator==(const StagePlan&, const StagePlan&) = default;
};

// What a plan's predictions assumed (plan file version 3; empty or < 0 where an older file does not
// say). `loom train --plan` takes the optimizer and precision as its defaults and refuses a flag
// that says otherwise.
struct PlanAssumptions {
  std::string optimizer;               // a loom train --optimizer ("adam")
  double optimizer_state_factor = -1;  // its state bytes per parameter byte (Adam 2)
  std::string precision;               // a loom train --precision ("fp32")
  // The model's preset size and every setting (loom train --size, --set), where the profile says
  // (Profile::model_size, model_settings); the preset is Plan::model.
  std::string model_size, model_settings;
  std::string cluster;                 // loom plan --cluster as given
  double device_memory_bytes = -1;     // the cap every stage's predicted peak is within
  std::string profile;                 // the profile file planned from
  std::string profile_fingerprint;     // FNV-1a of its text, 16 hex digits
  std::string loom_version;            // the loom that planned it
  friend bool operator==(const PlanAssumptions&, const PlanAssumptions&) = default;
};

struct Plan {
  std::string model;
  std::string planner;    // "dapple", "pipedream", "dp", "dp-overlap", "gpipe"
  std::string placement;  // the placement policy that produced it, when one did
  int global_batch = 0;
  int microbatches = 1;
  ScheduleKind schedule = ScheduleKind::dapple;
  int chunks = 1;  // layer ranges per stage (v of the multi-chunk kinds)
  int zero = 0;    // 1: ZeRO-1, optimizer state sharded over each stage's replicas
  // Gradients are allreduced bucket by bucket while the last backward still runs
  // (BucketedAllreduce); otherwise each stage allreduces after its last backward, as DAPPLE models it.
  bool overlap_allreduce = false;
  std::vector<StagePlan> stages;
  // Tensor-parallel ranks per stage replica; 1 until the runtime runs tensor parallelism (a plan
  // file reserves the field from version 3).
  int tensor_parallel = 1;
  PlanAssumptions assumptions;

  // Filled by the one model (plan_score.h: record_score), with each stage's predicted_peak_bytes.
  double predicted_step_ms = 0;
  double peak_memory_bytes = 0;
  // The joint search's proof: no plan of its space is faster (JointResult::lower_bound_ms); < 0: none.
  double lower_bound_ms = -1;

  int stage_count() const { return static_cast<int>(stages.size()); }
  int devices_used() const;
  int microbatch_size() const { return global_batch / microbatches; }
  // "[0-23]x8 | [24-47]x8"; several chunks: "[0-3,8-11]x2 | ..."
  std::string strategy() const;
};

// The schedule the plan names, generated for its stages, micro-batches and chunks (which chunk of
// which stage holds which virtual stage: Schedule::virtual_stage); a loom::Error when the kind
// refuses those sizes or holds another number of chunks.
schedule::Schedule plan_schedule(const Plan& plan);
// Each virtual stage's layers, in model order (one per stage for one-chunk plans).
std::vector<LayerRange> virtual_stage_layers(const Plan& plan, const schedule::Schedule& sched);

// Throws loom::Error when the virtual stages do not cover layers 0..layers-1 in order, a stage
// does not have `chunks` ranges, the schedule refuses the sizes (plan_schedule), a device is used
// twice or lies outside 0..devices-1, M does not divide the global batch, a stage has more replicas
// than a micro-batch has samples, zero is not 0 or 1, or a recomputed block is not ascending or
// not one of the stage's layers.
void validate(const Plan& plan, int layers, int devices);

}  // namespace loom::planner
