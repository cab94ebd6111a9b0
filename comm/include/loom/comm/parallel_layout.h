// Which world rank runs each (stage, replica) of the pipeline.
//
// By default ranks are laid out stage-major: rank = stage * R + replica. A plan may instead give
// an explicit rank table (ranks[stage][replica]), for example to place a stage's replicas on one
// machine (the planner's placement policies). A rank may appear in several stages (interleaved
// schedules give one rank several virtual stages) but at most once per stage; ranks that appear
// nowhere are idle.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace loom::comm {

struct StagePosition {
  int stage = -1;
  int replica = -1;
};

class ParallelLayout {
 public:
  static ParallelLayout uniform(int stages, int replicas);
  // Stage s gets replicas_per_stage[s] consecutive ranks, stage 0 first.
  static ParallelLayout consecutive(const std::vector<int>& replicas_per_stage);
  static ParallelLayout from_table(std::vector<std::vector<int>> ranks);

  int stages() const { return static_cast<int>(ranks_.size()); }
  int replicas(int stage) const { return static_cast<int>(ranks_.at(stage).size()); }
  int rank(int stage, int replica) const { return ranks_.at(stage).at(replica); }
  const std::vector<int>& stage_ranks(int stage) const { return ranks_.at(stage); }
  // Ranks needed to run the layout (largest rank + 1).
  int ranks_needed() const;
  // Every (stage, replica) that `rank` holds, in stage order; empty for an idle rank.
  std::vector<StagePosition> positions(int rank) const;
  std::string describe() const;  // "stage 0: ranks 0 1 | stage 1: ranks 2 3"

 private:
  explicit ParallelLayout(std::vector<std::vector<int>> ranks);
  std::vector<std::vector<int>> ranks_;
};

}  // namespace loom::comm
