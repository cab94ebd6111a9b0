// The Trainer's checkpoints (`loom train --checkpoint DIR` / `--resume DIR`): one safetensors file and a small JSON manifest per
// pipeline stage, plus DIR/manifest.json that rank 0 writes last, once every stage's files are in
// place. A stage's file holds all its chunks' parameters (and buffers) and the optimizer state;
// replica 0 of each stage writes it (replicas are identical after every synchronous step).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/layers/layer.h>
#include <loom/layers/optimizer.h>

namespace loom::runtime {

// What a checkpoint must agree on to be resumed: the model and its split into stages.
struct CheckpointLayout {
  std::string model;
  std::map<std::string, double> settings;  // the model's settings after size and overrides, compared as values
  int stage = 0, stages = 1, chunks = 1;
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;  // this stage's chunks: [first, last)
  std::int64_t global_batch = 0;
  std::uint64_t seed = 0;
  // The learning-rate path: a run resumed under a decaying schedule must have the same length.
  std::string lr_schedule = "constant";
  std::int64_t total_steps = 0;
};

// Collective over `world` (every rank of the run). `writer`: this rank writes its stage's files.
void save_training_checkpoint(comm::Communicator& world, const std::string& dir, const CheckpointLayout& layout, std::int64_t step,
                              const std::vector<NamedParameter>& parameters, Optimizer& optimizer, bool writer);

// Checks DIR's manifests against `layout` and loads this stage's parameters and optimizer state;
// returns the step the checkpoint was taken after. Every problem is a loom::Error naming the file.
std::int64_t load_training_checkpoint(comm::Communicator& world, const std::string& dir, const CheckpointLayout& layout,
                                      const std::vector<NamedParameter>& parameters, Optimizer& optimizer);

}  // namespace loom::runtime
