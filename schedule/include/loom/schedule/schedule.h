// A pipeline schedule: for each stage, the ordered program its ranks run. Replicas of a stage run
// the same program, so one list per stage is the per-rank program of every replica.
//
// With `chunks` = v > 1 (interleaved and V-shaped schedules) the model is cut into stages·v virtual
// stages, and `placement` says which chunk of which stage holds each. Without one, chunk c of stage
// s holds virtual stage c·stages + s (Megatron's looped assignment): activations flow stage 0 → 1 →
// … → S−1 → (chunk + 1 on) stage 0 → … A V placement (v_placement: chunk 0 of stage s holds virtual
// stage s, chunk 1 holds 2S−1−s) sends them down the pipeline and back up; the boundary between
// virtual stages S−1 and S then joins two chunks of one stage, a local hand-over.
#pragma once

#include <string>
#include <vector>

#include <loom/schedule/action.h>
#include <loom/schedule/schedule_kind.h>

namespace loom::schedule {

struct Schedule {
  std::string name;      // the kind's name ("gpipe", ...), or a file's own ("custom" when it has none)
  int stages = 0;        // S
  int microbatches = 0;  // M: micro-batches covered by the program (the whole window for PipeDream)
  int chunks = 1;        // v: virtual stages per rank
  std::vector<std::vector<Action>> programs;  // programs[stage]
  // placement[chunk * stages + stage]: the virtual stage that chunk of that stage holds; empty: the
  // looped c·S + s. A permutation of 0..S·v−1 (the validator checks it).
  std::vector<int> placement = {};
  // Where the programs came from: the generator of a kind, or custom (read from a file, built by
  // hand). Not part of what the schedule is: == ignores it (a file of dapple's programs == dapple()).
  ScheduleKind kind = ScheduleKind::custom;

  int virtual_stages() const { return stages * chunks; }
  int virtual_stage(int stage, int chunk) const {
    return placement.empty() ? chunk * stages + stage : placement.at(static_cast<std::size_t>(chunk * stages + stage));
  }
  int stage_of(int virtual_stage) const;  // the stage holding it
  int chunk_of(int virtual_stage) const;  // which of its stage's chunks it is
  bool is_first(int stage, int chunk) const { return virtual_stage(stage, chunk) == 0; }
  bool is_last(int stage, int chunk) const { return virtual_stage(stage, chunk) == virtual_stages() - 1; }
  // True when actions carry weight versions (PipeDream-style asynchronous updates).
  bool asynchronous() const;
  // The batch structure: optimizer steps one run of the program takes (the STEPs of a stage's
  // program: 1 for synchronous schedules, the window for PipeDream) and micro-batches per step.
  int batches() const;
  int microbatches_per_batch() const { return microbatches / batches(); }

  friend bool operator==(const Schedule& a, const Schedule& b) { return a.name == b.name && same_programs(a, b); }
  // The same stages, micro-batches, chunks, placement and programs, whatever the names and kinds.
  friend bool same_programs(const Schedule& a, const Schedule& b) {
    return a.stages == b.stages && a.microbatches == b.microbatches && a.chunks == b.chunks &&
           a.placement == b.placement && a.programs == b.programs;
  }
};

// A schedule of `kind` with its name and placement (a V for V-shaped kinds) and no programs yet: what
// each generator starts from.
Schedule empty_schedule(ScheduleKind kind, int stages, int microbatches, int chunks = 1);

// The V placement of S stages with 2 chunks each: chunk 0 of stage s holds virtual stage s, chunk 1
// holds 2S−1−s (ZB-V, V-Half, V-Min, DualPipeV).
std::vector<int> v_placement(int stages);

}  // namespace loom::schedule
