// Activation recomputation in the planner's model (issue 29). A pipeline stage may recompute any
// subset R of its blocks: their forward runs again just before each micro-batch's backward, as
// loom's StageRunner does (runtime/stage_runner.h). Per chunk and micro-batch in flight the stage
// then keeps its chunk's input, the activations of its blocks not in R and, for each run of
// consecutive blocks of R that does not start the chunk, the run's input (the boundary bytes of the
// block before it). A B or BI runs the recomputed blocks again first (their working sets on top) and
// holds their activations through its backward; a BI leaves them for its BW, so every micro-batch
// between its BI and its BW holds them (ChunkMemory::split_held). The chunk's B, or its BI, lasts
// its recomputed blocks' forward longer.
//
// The search (fit_by_recomputation) recomputes only where a candidate does not fit without it
// (recomputation never makes a step faster). Per stage over the cap it keeps the recomputation sets
// that fit it — its peak is the simulator's walk over its own program (independent of timing and
// of other stages) — and of those the ones no other beats on every chunk's added time; it
// simulates every combination of the stages' choices and keeps the fastest. The family of sets (recompute_candidates): every subset of the stage's blocks
// when it holds at most kExactRecomputeBlocks, else the prefixes of its chunks (the first k blocks
// of each: a prefix keeps no input beyond the chunk's own, which its first block keeps anyway, so
// it saves exactly its blocks' activations; n + 1 choices per chunk instead of 2^n).
// Exact over that family while the combinations number at most kMaxRecomputeCombinations (every
// one-chunk kind: one choice per stage), else each stage's least added time overall is taken.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <loom/planner/cost_model.h>
#include <loom/planner/partition_evaluation.h>

namespace loom::planner {

inline constexpr int kExactRecomputeBlocks = 10;
inline constexpr int kMaxRecomputeCombinations = 64;

// What recomputing `blocks` (global indices, ascending; those outside first..last ignored) changes
// in the chunk of layers first..last at `rows` rows per micro-batch.
struct ChunkRecompute {
  double forward_ms = 0;   // added to the chunk's backward
  // Activations no longer kept per micro-batch in flight (what they were, less the outputs the next
  // block keeps where it is not recomputed: LayerCost::next_kept_bytes), held again in its backward.
  double saved_bytes = 0;
  double input_bytes = 0;  // inputs kept for the runs that do not start the chunk (beyond what is kept anyway)
  // The peak of running them again at the start of a B or BI, above what the micro-batch held: the
  // recomputed activations up to each block plus that block's forward workspace.
  double recompute_peak_bytes = 0;
};
ChunkRecompute chunk_recompute(const Profile& profile, int first, int last, int rows, const std::vector<int>& blocks);

// The sets searched for a stage holding these chunks (first and last layer each); none excluded.
std::vector<std::vector<int>> recompute_candidates(const std::vector<std::pair<int, int>>& chunks);

// `p` evaluated as `e` does not fit: sets p.recompute (and e) to the fastest recomputation of the
// family under which every stage fits and returns true; false (p, e untouched) when some stage fits
// under none, with `why` naming it.
bool fit_by_recomputation(const Profile& profile, const Cluster& cluster, Partition& p, PartitionEvaluation& e,
                          const CostOptions& options, std::string& why);

}  // namespace loom::planner
