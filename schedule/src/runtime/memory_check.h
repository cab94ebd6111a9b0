// Refusing a run that cannot fit before anything is allocated (issue 15, "impossible model
// sizes"): from the model's meta build, each stage's parameters, gradients and optimizer state
// plus one micro-batch of its saved activations — a lower bound of what a rank of that stage
// holds — against the memory this machine has available to each of its ranks.
#pragma once

#include <cstdint>

#include <loom/models/model.h>
#include <loom/runtime/trainer.h>

#include "run_setup.h"

namespace loom::runtime::detail {

// Bytes available to one rank: MemAvailable of /proc/meminfo divided by the ranks on this host
// (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, else 1); LOOM_MEMORY_LIMIT_MB overrides (tests).
double available_bytes_per_rank();

// Throws loom::Error naming the stage, the estimate by category and what is available.
void check_memory_fits(const TrainerConfig& config, const ModelSpec& spec, const StagePartition& partition,
                       std::int64_t microbatch_rows);

}  // namespace loom::runtime::detail
