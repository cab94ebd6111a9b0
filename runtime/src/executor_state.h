// The executor's state per chunk and per micro-batch, shared by executor.cpp and overlap_pair.cpp.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include <loom/runtime/executor.h>
#include <loom/runtime/stage_runner.h>

namespace loom::runtime {

using schedule::Action;
using schedule::Op;

struct Executor::MicrobatchState {
  struct {
    std::int64_t step = 0;            // the optimizer step of its global batch
    std::int64_t microbatch_rows = 0;
    std::int64_t first = 0;           // this replica's first row within the batch
    std::int64_t count = 0;           // this replica's rows
  } rows;
  TensorList inputs;        // received or read, until forward
  Tensor targets;           // last virtual stage, until forward
  Tensor host_targets;      // the same rows in host memory (the loss checks them there)
  TensorList outputs;       // until sent
  TensorList grad_outputs;  // received, until backward
  TensorList grad_inputs;   // until sent
  comm::PendingReceive activation_receive;
  comm::PendingReceive gradient_receive;
};

struct Executor::ChunkState {
  int virtual_stage = 0;
  bool first = false;
  bool last = false;
  // This rank's chunk holding the next (previous) virtual stage, when that boundary is local (a V's
  // turn, interleaving on one stage): its tensors are handed over in memory, not sent. Else -1.
  int next_local = -1, previous_local = -1;
  int replica = 0;
  std::unique_ptr<StageRunner> runner;
  std::map<int, MicrobatchState> microbatches;
  std::vector<std::vector<int>> block_gradients;  // per block: its gradients' bucketer indices
  std::unique_ptr<comm::GradientBucketer> bucketer;  // null without replicas
};

}  // namespace loom::runtime
