// The independent reference for pipelined training: the whole model on one rank, the whole global
// batch in one forward/backward (or in `pieces` runs of consecutive rows: the micro-batch x
// replica shares, for models with BatchNorm), the same optimizer and data order, no executor, no MPI.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compare_runs.h"
#include "sequential_run.h"
#include "train_run.h"

namespace loom::test {

// The losses and the final parameters.
SequentialRun train_sequentially(const runtime::TrainerConfig& options, std::int64_t pieces = 1);

}  // namespace loom::test

namespace loom::test {

// The reference for asynchronous schedules: minibatch n runs the blocks of stage s with that
// stage's weights after `version[s][n]` updates (weight stashing), and every stage then applies the
// minibatch's gradient to its newest weights (W_s(n+1) = W_s(n) - step(grad at W_s(version))).
// `stage_of_block[b]` is the stage holding block b. One process, whole batches, no executor.
SequentialRun train_with_versions(const runtime::TrainerConfig& options, const std::vector<std::vector<int>>& version,
                                  const std::vector<int>& stage_of_block);

}  // namespace loom::test
