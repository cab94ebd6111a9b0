// `loom train` as tests and the CLI run it: a runtime::Trainer (runtime/include/loom/runtime/
// trainer.h) with rank 0's progress output and metrics file around it. Collective over
// MPI_COMM_WORLD.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <loom/runtime/trainer.h>

namespace loom::apps {

// The Trainer's config plus what only the app does with a run.
struct TrainOptions : runtime::TrainerConfig {
  std::string metrics;            // JSON lines of per-step and per-epoch metrics (rank 0)
  std::int64_t log_every = 1;
  bool quiet = false;             // no progress output (tests)
  double peak_gflops = 0;         // the job's peak for MFU (model_flops.h); 0: measured on CPUs
};

using TrainSummary = runtime::TrainSummary;

// What a test may inspect when training ends: this rank's model chunks (blocks with global
// indices) and its stage.
struct TrainedStage {
  int stage = 0;
  std::vector<Chain*> chunks;
};

// `run`: the config resolved from `options` (runtime::resolve_config), as the CLI checks it first.
TrainSummary train(const TrainOptions& options, runtime::ResolvedConfig run,
                   const std::function<void(const TrainedStage&)>& on_finish = nullptr);
inline TrainSummary train(const TrainOptions& options,
                          const std::function<void(const TrainedStage&)>& on_finish = nullptr) {
  return train(options, runtime::resolve_config(options), on_finish);
}

}  // namespace loom::apps
