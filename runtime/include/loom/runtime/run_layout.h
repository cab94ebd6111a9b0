// What a run is, resolved once from the config (and its plan or schedule file), the model and the
// world size, the same on every rank, and not changed afterwards: the schedule's programs, the cut
// of the model's blocks into (virtual) stages, the ranks of each stage, the global batch and the
// run's length. The Trainer builds from it; `loom train` and `loom simulate` read schedule files
// through the same schedule::load_schedule_file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <loom/models/model.h>
#include <loom/runtime/trainer_config.h>
#include <loom/schedule/schedule.h>

namespace loom::runtime {

struct RunLayout {
  // Every rank's program, per stage: a kind's generator (schedule.kind) or the schedule file's
  // (custom). Asynchronous kinds run a window of batches (Schedule::batches()) as one program.
  schedule::Schedule schedule;
  std::string schedule_file;  // where the programs came from, or empty (a generator)
  std::int64_t global_batch = 1;
  std::int64_t steps = 0;           // optimizer steps of the whole run
  std::int64_t steps_per_epoch = 0;
  std::int64_t train_samples = 0;   // the training split's samples
  bool zero = false;                // ZeRO-1: --zero 1, or the plan's
  std::vector<std::vector<int>> ranks;                         // ranks[stage][replica]
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;  // per virtual stage: [first, last)
  std::vector<std::vector<std::int64_t>> recompute;            // per stage: blocks a plan recomputes
  // From a plan file: each stage's predicted peak bytes per rank (empty: no plan, or it predicts
  // none) and the device memory it was planned for (< 0: not recorded), which the run's measured
  // peaks are set against after its first step.
  std::vector<double> predicted_peak_bytes;
  double planned_device_memory = -1;
  std::string plan_file;  // where they came from, or empty

  int stages() const { return schedule.stages; }
  int chunks() const { return schedule.chunks; }
  int microbatches() const { return schedule.microbatches_per_batch(); }  // per batch (PipeDream: 1)
  // The rows of one micro-batch, all replicas of a stage together.
  std::int64_t microbatch_rows() const { return global_batch / microbatches(); }
  // The blocks chunk `chunk` of stage `stage` holds.
  std::pair<std::int64_t, std::int64_t> chunk_blocks(int stage, int chunk) const;
  // The pipeline stage of world rank `rank`; a loom::Error when it has none.
  int stage_of_rank(int rank) const;
};

// Minibatches an asynchronous schedule runs as one window (its action lists grow with it).
inline constexpr std::int64_t kMaxAsyncWindow = std::int64_t{1} << 20;

// The layout of `config` for `spec` on `world` ranks whose training split has `train_samples`
// samples: from the plan file, the schedule file, or --stages x --replicas with the kind's
// generator. Every inconsistency is one loom::Error naming the flag or file and the fix.
RunLayout resolve_run_layout(const ResolvedConfig& config, const ModelSpec& spec, int world, std::int64_t train_samples);

}  // namespace loom::runtime
