// Recomputation in the planner's model and its search (see recomputation.h).
#include <loom/planner/recomputation.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <loom/base/error.h>

namespace loom::planner {

namespace {

bool holds(const std::vector<int>& blocks, int layer) {
  return std::binary_search(blocks.begin(), blocks.end(), layer);
}

// One stage's choices that fit: the recomputed layers and the time each chunk's backward gains.
struct Choice {
  std::vector<int> blocks;
  std::vector<double> added_ms;  // per chunk
  double total_ms = 0;
};

bool dominates(const Choice& a, const Choice& b) {
  bool better = false;
  for (std::size_t c = 0; c < a.added_ms.size(); ++c) {
    if (a.added_ms[c] > b.added_ms[c]) return false;
    better = better || a.added_ms[c] < b.added_ms[c];
  }
  return better;
}

// The stage's sets under which it fits the cap, none beaten on every chunk by another, least time first.
std::vector<Choice> stage_choices(const Profile& profile, const Cluster& cluster, const Partition& p,
                                  const PartitionEvaluation& e, int s, const CostOptions& options) {
  const schedule::Schedule& sched = e.schedule;
  const StageEvaluation& stage = e.stages[static_cast<std::size_t>(s)];
  const int rows = ceil_div(p.global_batch / p.microbatches, static_cast<int>(stage.devices.size()));
  std::vector<std::pair<int, int>> chunks;
  for (int c = 0; c < sched.chunks; ++c)
    chunks.push_back(p.layers[static_cast<std::size_t>(sched.virtual_stage(s, c))]);
  Partition trial = p;
  trial.recompute.assign(static_cast<std::size_t>(sched.stages), {});
  std::vector<Choice> fits;
  for (std::vector<int>& blocks : recompute_candidates(chunks)) {
    Choice choice{std::move(blocks), {}, 0};
    for (const auto& [first, last] : chunks) {
      const ChunkRecompute r = chunk_recompute(profile, first, last, rows, choice.blocks);
      choice.added_ms.push_back(r.forward_ms);
      choice.total_ms += r.forward_ms;
    }
    // The stage's peak as evaluate_partition counts it: it depends on this stage's set alone.
    trial.recompute[static_cast<std::size_t>(s)] = choice.blocks;
    StageStaticBytes bytes;
    const schedule::StageCost cost = stage_costs(profile, cluster, trial, sched, stage.devices, s, options, bytes);
    if (bytes.peak(schedule::stage_peak_activation_bytes(sched, s, cost)) <= cluster.device_memory)
      fits.push_back(std::move(choice));
  }
  std::vector<Choice> front;
  for (const Choice& a : fits)
    if (std::none_of(fits.begin(), fits.end(), [&](const Choice& b) { return dominates(b, a); }) &&
        std::none_of(front.begin(), front.end(), [&](const Choice& b) { return b.added_ms == a.added_ms; }))
      front.push_back(a);
  std::sort(front.begin(), front.end(), [](const Choice& a, const Choice& b) { return a.total_ms < b.total_ms; });
  return front;
}

}  // namespace

ChunkRecompute chunk_recompute(const Profile& profile, int first, int last, int rows, const std::vector<int>& blocks) {
  ChunkRecompute r;
  for (int l = first; l <= last; ++l) {
    if (!holds(blocks, l)) continue;
    const LayerCost c = profile.cost_at(l, rows);
    r.forward_ms += c.forward_ms;
    // The next block of the chunk, kept, still holds this one's output (its input).
    const bool next_kept = l < last && !holds(blocks, l + 1);
    r.saved_bytes += c.activation_bytes - (next_kept ? c.next_kept_bytes : 0.0);
    r.recompute_peak_bytes = std::max(r.recompute_peak_bytes, r.saved_bytes + c.forward_workspace_bytes);
    if (l > first && !holds(blocks, l - 1)) {  // the run's input, less what block l - 1 counts of it already
      const LayerCost before = profile.cost_at(l - 1, rows);
      r.input_bytes += std::max(0.0, before.boundary_bytes - before.next_kept_bytes);
    }
  }
  return r;
}

std::vector<std::vector<int>> recompute_candidates(const std::vector<std::pair<int, int>>& chunks) {
  std::vector<int> layers;
  for (const auto& [first, last] : chunks)
    for (int l = first; l <= last; ++l) layers.push_back(l);
  std::vector<std::vector<int>> sets = {{}};
  if (static_cast<int>(layers.size()) <= kExactRecomputeBlocks) {
    std::sort(layers.begin(), layers.end());
    for (unsigned mask = 1; mask < (1u << layers.size()); ++mask) {
      sets.emplace_back();
      for (std::size_t i = 0; i < layers.size(); ++i)
        if (mask & (1u << i)) sets.back().push_back(layers[i]);
    }
  } else {
    for (const auto& [first, last] : chunks) {  // each set so far, with each prefix of this chunk
      const std::size_t before = sets.size();
      for (std::size_t i = 0; i < before; ++i)
        for (int end = first; end <= last; ++end) {
          std::vector<int> more = sets[i];
          for (int l = first; l <= end; ++l) more.push_back(l);
          sets.push_back(std::move(more));
        }
    }
    for (std::vector<int>& set : sets) std::sort(set.begin(), set.end());
  }
  sets.erase(sets.begin());  // none
  return sets;
}

bool fit_by_recomputation(const Profile& profile, const Cluster& cluster, Partition& p, PartitionEvaluation& e,
                          const CostOptions& options, std::string& why) {
  const int stages = static_cast<int>(e.stages.size());
  std::vector<std::vector<Choice>> choices(static_cast<std::size_t>(stages));
  long combinations = 1;
  for (int s = 0; s < stages; ++s) {
    if (e.stages[static_cast<std::size_t>(s)].peak_bytes <= cluster.device_memory) {
      choices[static_cast<std::size_t>(s)] = {Choice{}};
      continue;
    }
    choices[static_cast<std::size_t>(s)] = stage_choices(profile, cluster, p, e, s, options);
    if (choices[static_cast<std::size_t>(s)].empty()) {
      why = loom::detail::concat("stage ", s, " does not fit under any recomputation");
      return false;
    }
    combinations = std::min<long>(combinations * static_cast<long>(choices[static_cast<std::size_t>(s)].size()),
                                  kMaxRecomputeCombinations + 1);
  }
  if (combinations > kMaxRecomputeCombinations)
    for (std::vector<Choice>& c : choices) c.resize(1);  // each stage's least added time
  Partition best_p;
  PartitionEvaluation best_e;
  double best_ms = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> pick(static_cast<std::size_t>(stages), 0);
  for (;;) {  // every combination, the last stage's choice fastest-changing
    Partition candidate = p;
    candidate.recompute.clear();
    for (int s = 0; s < stages; ++s)
      candidate.recompute.push_back(choices[static_cast<std::size_t>(s)][pick[static_cast<std::size_t>(s)]].blocks);
    PartitionEvaluation evaluated = evaluate_partition(profile, cluster, candidate, options);
    if (evaluated.fits && evaluated.simulation.step_ms < best_ms) {
      best_ms = evaluated.simulation.step_ms;
      best_p = std::move(candidate);
      best_e = std::move(evaluated);
    }
    int s = stages - 1;
    while (s >= 0 && ++pick[static_cast<std::size_t>(s)] == choices[static_cast<std::size_t>(s)].size())
      pick[static_cast<std::size_t>(s--)] = 0;
    if (s < 0) break;
  }
  if (!std::isfinite(best_ms)) {
    why = "recomputation that fits each stage by the count still leaves one over the cap in the simulator";
    return false;
  }
  p = std::move(best_p);
  e = std::move(best_e);
  return true;
}

}  // namespace loom::planner
