// A run of the runtime::Trainer as the runtime tests drive it: the Trainer from a config, run to the
// end without hooks (nothing is printed), and this rank's stage and model chunks handed to the
// caller before the Trainer goes (the weights a test compares with its reference).
#pragma once

#include <functional>
#include <vector>

#include <loom/runtime/trainer.h>

namespace loom::test {

struct TrainedStage {
  int stage = 0;
  std::vector<Chain*> chunks;  // this rank's model chunks (blocks with global indices)
  std::pair<int, int> scattered_buckets;  // Trainer::scattered_buckets()
};

inline runtime::TrainSummary train(const runtime::TrainerConfig& config,
                                   const std::function<void(const TrainedStage&)>& on_finish = nullptr) {
  runtime::Trainer trainer(config);
  runtime::TrainSummary summary = trainer.run();
  if (on_finish) on_finish({trainer.stage(), trainer.chunks(), trainer.scattered_buckets()});
  return summary;
}

}  // namespace loom::test
