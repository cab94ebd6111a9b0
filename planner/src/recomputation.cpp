// Recomputation in the planner's model and its search (see recomputation.h).
#include <loom/planner/recomputation.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <loom/core/error.h>

namespace loom::planner {

namespace {

bool holds(const std::vector<int>& blocks, int layer) { return std::binary_search(blocks.begin(), blocks.end(), layer); }

// Every distinct count of in-flight micro-batches per chunk the stage's program passes through, in
// its order (the walk of the simulator's peak_chunk_bytes: F adds, B or BW releases).
std::vector<std::vector<int>> inflight_counts(const std::vector<schedule::Action>& program, int chunks) {
  std::vector<std::vector<int>> seen;
  std::vector<int> count(static_cast<std::size_t>(chunks), 0);
  std::set<std::pair<int, int>> inflight;
  for (const schedule::Action& a : program) {
    if (a.op == schedule::Op::Forward) {
      inflight.insert({a.microbatch, a.chunk});
      ++count[static_cast<std::size_t>(a.chunk)];
    }
    if (schedule::ends_backward(a.op) && inflight.erase({a.microbatch, a.chunk}) == 1)
      --count[static_cast<std::size_t>(a.chunk)];
    if (std::find(seen.begin(), seen.end(), count) == seen.end()) seen.push_back(count);
  }
  return seen;
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
                                  const PartitionEvaluation& e, int s) {
  const schedule::Schedule& sched = e.schedule;
  const StageEvaluation& stage = e.stages[static_cast<std::size_t>(s)];
  const int rows = ceil_div(p.global_batch / p.microbatches, static_cast<int>(stage.devices.size()));
  std::vector<std::pair<int, int>> chunks;
  std::vector<double> kept;
  for (int c = 0; c < sched.chunks; ++c) {
    chunks.push_back(p.layers[static_cast<std::size_t>(sched.virtual_stage(s, c))]);
    kept.push_back(range_cost(profile, chunks.back().first, chunks.back().second, rows).kept_bytes);
  }
  const std::vector<std::vector<int>> counts = inflight_counts(sched.programs[static_cast<std::size_t>(s)], sched.chunks);
  std::vector<Choice> fits;
  for (std::vector<int>& blocks : recompute_candidates(chunks)) {
    Choice choice{std::move(blocks), {}, 0};
    std::vector<double> bytes(chunks.size());
    double transient = 0;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      const ChunkRecompute r = chunk_recompute(profile, chunks[c].first, chunks[c].second, rows, choice.blocks);
      bytes[c] = kept[c] - r.saved_bytes + r.input_bytes;
      transient = std::max(transient, r.saved_bytes);
      choice.added_ms.push_back(r.forward_ms);
      choice.total_ms += r.forward_ms;
    }
    double peak = 0;
    for (const std::vector<int>& n : counts) {
      double held = 0;
      for (std::size_t c = 0; c < chunks.size(); ++c) held += n[c] * bytes[c];
      peak = std::max(peak, held);
    }
    if (stage.static_bytes + peak + transient <= cluster.device_memory) fits.push_back(std::move(choice));
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
    r.saved_bytes += c.activation_bytes;
    if (l > first && !holds(blocks, l - 1)) r.input_bytes += profile.cost_at(l - 1, rows).boundary_bytes;
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
    choices[static_cast<std::size_t>(s)] = stage_choices(profile, cluster, p, e, s);
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
