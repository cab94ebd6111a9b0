// What the checkpoint tests share: a run that hands back this rank's weights by parameter name, and
// a scratch directory rank 0 names and every rank uses.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <mpi.h>

#include "train_run.h"

namespace loom::test {

using Weights = std::map<std::string, std::vector<double>>;

inline runtime::TrainSummary train_keeping_weights(const runtime::TrainerConfig& o, Weights& weights) {
  return train(o, [&](const TrainedStage& stage) {
    for (Chain* chunk : stage.chunks)
      for (const NamedParameter& p : chunk->parameters()) weights[p.name] = p.parameter->value.to_double_vector();
  });
}

inline std::string shared_scratch_dir(const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() / ("loom_ckpt_" + name + "_" + std::to_string(::getpid()))).string();
  int length = static_cast<int>(dir.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  dir.resize(static_cast<std::size_t>(length));
  MPI_Bcast(dir.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  return dir;
}

}  // namespace loom::test
