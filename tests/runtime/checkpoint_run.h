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

// The small gpt these tests train (8 blocks: embedding, 6 layers, head; dropout on; the head tied to
// the embedding), SGD momentum 0.9 at a constant lr 0.05 (a stopped run has fewer steps in all),
// global batch 16 in 4 micro-batches, one thread.
inline runtime::TrainerConfig small_gpt_config(std::uint64_t seed) {
  runtime::TrainerConfig o;
  o.model = "gpt";
  o.overrides = "seq=8,dim=16,heads=2,layers=6,dropout=10";
  o.data = "synthetic";
  o.global_batch = 16;
  o.microbatches = 4;
  o.seed = seed;
  o.threads = 1;
  o.optimizer = "sgd";
  o.lr = 0.05;
  o.momentum = 0.9;
  o.lr_schedule = "constant";
  return o;
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
