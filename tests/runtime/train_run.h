// A run of the runtime::Trainer as the runtime tests drive it: the Trainer from a config, run to the
// end without hooks (nothing is printed), and this rank's stage and model chunks handed to the
// caller before the Trainer goes (the weights a test compares with its reference).
#pragma once

#include <functional>
#include <map>
#include <string>
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

// This rank's final weights by parameter name (its stage's chunks).
using Weights = std::map<std::string, std::vector<double>>;

inline runtime::TrainSummary train_keeping_weights(const runtime::TrainerConfig& o, Weights& weights) {
  return train(o, [&](const TrainedStage& stage) {
    for (Chain* chunk : stage.chunks)
      for (const NamedParameter& p : chunk->parameters()) weights[p.name] = p.parameter->value.to_double_vector();
  });
}

}  // namespace loom::test
