// The up-front memory check (see memory_check.h).
#include "memory_check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <loom/core/device_memory.h>
#include <loom/core/env.h>
#include <loom/core/error.h>
#include <loom/layers/optimizer_kind.h>

namespace loom::runtime::detail {

namespace {

std::string gigabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  return text;
}

}  // namespace

double available_bytes_per_rank() {
  const double limit_mb = env_positive("LOOM_MEMORY_LIMIT_MB", 0);
  if (limit_mb > 0) return limit_mb * 1024 * 1024;
  const auto available = static_cast<double>(device_memory_info(Device::cpu()).free_bytes);
  if (available <= 0) return 1e300;  // unknown: do not refuse
  return available / static_cast<double>(std::max<long long>(1, env_count("OMPI_COMM_WORLD_LOCAL_SIZE", 1, 1 << 20)));
}

void check_memory_fits(const TrainerConfig& config, const ModelSpec& spec, const StagePartition& partition,
                       std::int64_t microbatch_rows) {
  ModelSummary summary;
  try {
    summary = summarize(spec, 1);
  } catch (const Error&) {
    return;  // a model of the caller's own whose blocks cannot be built without memory: no estimate
  }
  const int state = optimizer_state_tensors(parse_optimizer_kind(config.optimizer), config.momentum);
  const double available = available_bytes_per_rank();
  for (std::size_t v = 0; v < partition.blocks.size(); ++v) {
    const int stage = static_cast<int>(v) % partition.stages;
    const auto replicas = static_cast<double>(partition.ranks.at(static_cast<std::size_t>(stage)).size());
    double parameters = 0, activations = 0;
    for (std::int64_t b = partition.blocks[v].first; b < partition.blocks[v].second; ++b) {
      parameters += static_cast<double>(summary.block_parameters.at(static_cast<std::size_t>(b))) * 4;
      activations += static_cast<double>(summary.blocks.at(static_cast<std::size_t>(b)).activation_bytes);
    }
    activations *= static_cast<double>(microbatch_rows) / replicas;
    const double needed = parameters * (2 + state) + activations;
    LOOM_CHECK(needed <= available, "model ", spec.name, " (", model_size_name(spec.size), " size) needs at least ",
               gigabytes(needed), " per rank of stage ", stage, " (parameters and gradients ",
               gigabytes(2 * parameters), ", optimizer state ", gigabytes(state * parameters),
               ", one micro-batch of activations ", gigabytes(activations), ") but ", gigabytes(available),
               " is available to each rank here: use --size cpu, smaller --set values, more stages or a smaller batch");
  }
}

}  // namespace loom::runtime::detail
