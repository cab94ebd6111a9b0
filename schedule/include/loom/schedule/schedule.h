// A pipeline schedule: for each stage, the ordered program its ranks run. Replicas of a stage run
// the same program, so one list per stage is the per-rank program of every replica.
//
// With `chunks` = v > 1 (interleaved schedules) the model is cut into stages·v virtual stages and
// chunk c of stage s holds virtual stage c·stages + s (Megatron's assignment): activations flow
// stage 0 → 1 → … → S−1 → (chunk + 1 on) stage 0 → …
#pragma once

#include <string>
#include <vector>

#include <loom/schedule/action.h>

namespace loom::schedule {

struct Schedule {
  std::string name;      // "gpipe", "dapple", ... or "custom" for parsed text
  int stages = 0;        // S
  int microbatches = 0;  // M: micro-batches covered by the program (the whole window for PipeDream)
  int chunks = 1;        // v: virtual stages per rank
  std::vector<std::vector<Action>> programs;  // programs[stage]

  int virtual_stages() const { return stages * chunks; }
  int virtual_stage(int stage, int chunk) const { return chunk * stages + stage; }
  int stage_of(int virtual_stage) const { return virtual_stage % stages; }
  int chunk_of(int virtual_stage) const { return virtual_stage / stages; }
  bool is_first(int stage, int chunk) const { return virtual_stage(stage, chunk) == 0; }
  bool is_last(int stage, int chunk) const { return virtual_stage(stage, chunk) == virtual_stages() - 1; }
  // True when actions carry weight versions (PipeDream-style asynchronous updates).
  bool asynchronous() const;
  // The batch structure: optimizer steps one run of the program takes (the STEPs of a stage's
  // program: 1 for synchronous schedules, the window for PipeDream) and micro-batches per step.
  int batches() const;
  int microbatches_per_batch() const { return microbatches / batches(); }

  friend bool operator==(const Schedule&, const Schedule&) = default;
};

}  // namespace loom::schedule
