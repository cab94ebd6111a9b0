// The up-front memory check (see memory_check.h).
#include "memory_check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <loom/core/bytes_text.h>
#include <loom/comm/control.h>
#include <loom/core/device_memory.h>
#include <loom/core/env.h>
#include <loom/base/error.h>
#include <loom/layers/optimizer_kind.h>

namespace loom::runtime::detail {

std::vector<RankMemory> memory_by_rank(comm::Communicator& world, Device device, const comm::DevicePlacement& placement) {
  // Each rank fills its entry (free bytes, the processes sharing them, where the figure comes from),
  // the rest zero; the maximum over ranks is the table.
  enum Source : std::int64_t { device_memory, host_memory, limit };
  const double limit_mb = env_positive("LOOM_MEMORY_LIMIT_MB", 0);
  const DeviceMemoryInfo info = device_memory_info(device);
  const int me = world.rank();
  std::vector<std::int64_t> table(3 * static_cast<std::size_t>(world.size()), 0);
  std::int64_t* mine = table.data() + 3 * static_cast<std::size_t>(me);
  mine[0] = limit_mb > 0 ? static_cast<std::int64_t>(limit_mb * 1024 * 1024) : info.free_bytes;
  mine[1] = limit_mb > 0 || (device.is_sim() && !info.host) ? 1 : placement.sharing(me);
  mine[2] = limit_mb > 0 ? limit : info.host ? host_memory : device_memory;
  table = comm::max_over(world, std::move(table));

  std::vector<RankMemory> memory;
  for (int r = 0; r < world.size(); ++r) {
    const std::int64_t* entry = table.data() + 3 * static_cast<std::size_t>(r);
    RankMemory m;
    m.available = entry[0] > 0 ? static_cast<double>(entry[0]) / static_cast<double>(entry[1]) : 1e300;
    m.source = entry[2] == limit ? "LOOM_MEMORY_LIMIT_MB"
                                 : loom::detail::concat(entry[2] == host_memory ? "host memory" : placement.device_of(r).str(),
                                                        ": ", bytes_text(static_cast<double>(entry[0])), " free",
                                                        entry[1] > 1 ? loom::detail::concat(", shared by ", entry[1], " ranks") : "");
    memory.push_back(std::move(m));
  }
  return memory;
}

namespace {

// Block index of a parameter name "<block>.<name>".
std::int64_t block_of(const std::string& name) { return std::stoll(name.substr(0, name.find('.'))); }

int stage_of(const RunLayout& layout, std::size_t v) { return layout.schedule.stage_of(static_cast<int>(v)); }

bool stage_holds(const RunLayout& layout, int stage, std::int64_t block) {
  for (std::size_t v = 0; v < layout.blocks.size(); ++v)
    if (stage_of(layout, v) == stage && block >= layout.blocks[v].first && block < layout.blocks[v].second) return true;
  return false;
}

// Bytes of the tied copies in virtual stage v whose canonical is on the same stage.
double shared_tie_bytes(const ModelSpec& spec, const ModelSummary& summary, const RunLayout& layout, std::size_t v) {
  double bytes = 0;
  for (std::size_t t = 0; t < spec.ties.size(); ++t) {
    const std::int64_t copy = block_of(spec.ties[t].copy);
    if (copy < layout.blocks[v].first || copy >= layout.blocks[v].second) continue;
    if (stage_holds(layout, stage_of(layout, v), block_of(spec.ties[t].canonical)))
      bytes += static_cast<double>(summary.tie_elements.at(t)) * 4;
  }
  return bytes;
}

// The rank of `stage` with the least memory.
int tightest_rank(const RunLayout& layout, int stage, const std::vector<RankMemory>& memory) {
  const std::vector<int>& ranks = layout.ranks.at(static_cast<std::size_t>(stage));
  int tightest = ranks.front();
  for (int rank : ranks)
    if (memory.at(static_cast<std::size_t>(rank)).available < memory.at(static_cast<std::size_t>(tightest)).available)
      tightest = rank;
  return tightest;
}

// A plan's predicted peak per stage (the planner's one model) against what its ranks have.
void check_plan_fits(const RunLayout& layout, const std::vector<RankMemory>& memory) {
  for (std::size_t s = 0; s < layout.predicted_peak_bytes.size(); ++s) {
    const int rank = tightest_rank(layout, static_cast<int>(s), memory);
    const RankMemory& have = memory.at(static_cast<std::size_t>(rank));
    LOOM_CHECK(layout.predicted_peak_bytes[s] <= have.available, layout.plan_file, " predicts ",
               bytes_text(layout.predicted_peak_bytes[s]), " per rank of stage ", s, " but ",
               bytes_text(have.available), " is available to rank ", rank, " (", have.source,
               "): make the plan for this memory (loom plan --cluster ...:mem=), or give the ranks more");
  }
}

}  // namespace

void check_memory_fits(int state, const ModelSpec& spec, const RunLayout& layout,
                       const std::vector<RankMemory>& memory) {
  check_plan_fits(layout, memory);
  ModelSummary summary;
  try {
    summary = summarize(spec, 1);
  } catch (const Error&) {
    return;  // a model of the caller's own whose blocks cannot be built without memory: no estimate
  }
  for (std::size_t v = 0; v < layout.blocks.size(); ++v) {
    const int stage = stage_of(layout, v);
    const auto replicas = static_cast<double>(layout.ranks.at(static_cast<std::size_t>(stage)).size());
    double parameters = 0, activations = 0;
    for (std::int64_t b = layout.blocks[v].first; b < layout.blocks[v].second; ++b) {
      parameters += static_cast<double>(summary.block_parameters.at(static_cast<std::size_t>(b))) * 4;
      activations += static_cast<double>(summary.blocks.at(static_cast<std::size_t>(b)).activation_bytes);
    }
    activations *= static_cast<double>(layout.microbatch_rows()) / replicas;
    // A tie with both ends on this stage is one tensor: the copy (in this chunk) adds a gradient
    // only; a copy across stages is a parameter of its own here (tied_parameters.h).
    const double shared = shared_tie_bytes(spec, summary, layout, v);
    const double state_bytes = (parameters - shared) * state / (layout.zero ? replicas : 1.0);  // ZeRO-1: a 1/R slice
    const double needed = parameters * 2 - shared + state_bytes + activations;
    const int tightest = tightest_rank(layout, stage, memory);
    const RankMemory& have = memory.at(static_cast<std::size_t>(tightest));
    LOOM_CHECK(needed <= have.available, "model ", spec.name, " (", model_size_name(spec.size), " size) needs at least ",
               bytes_text(needed), " per rank of stage ", stage, " (parameters and gradients ",
               bytes_text(2 * parameters - shared), ", optimizer state ", bytes_text(state_bytes),
               ", one micro-batch of activations ", bytes_text(activations), ") but ", bytes_text(have.available),
               " is available to rank ", tightest, " (", have.source,
               "): use --size cpu, smaller --set values, more stages or a smaller batch");
  }
}

}  // namespace loom::runtime::detail
