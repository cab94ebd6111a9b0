#include <loom/comm/parallel_layout.h>

#include <algorithm>
#include <set>
#include <sstream>

#include <loom/base/error.h>

namespace loom::comm {

ParallelLayout::ParallelLayout(std::vector<std::vector<int>> ranks) : ranks_(std::move(ranks)) {
  LOOM_CHECK(!ranks_.empty(), "a parallel layout needs at least one stage");
  for (int stage = 0; stage < stages(); ++stage) {
    LOOM_CHECK(!ranks_[stage].empty(), "stage ", stage, " of the layout has no ranks");
    std::set<int> seen;
    for (int rank : ranks_[stage]) {
      LOOM_CHECK(rank >= 0, "stage ", stage, " of the layout lists negative rank ", rank);
      LOOM_CHECK(seen.insert(rank).second, "stage ", stage, " of the layout lists rank ", rank, " twice");
    }
  }
}

ParallelLayout ParallelLayout::uniform(int stages, int replicas) {
  LOOM_CHECK(stages > 0 && replicas > 0, "layout of ", stages, " stages x ", replicas, " replicas");
  return consecutive(std::vector<int>(stages, replicas));
}

ParallelLayout ParallelLayout::consecutive(const std::vector<int>& replicas_per_stage) {
  std::vector<std::vector<int>> ranks;
  int next = 0;
  for (int replicas : replicas_per_stage) {
    LOOM_CHECK(replicas > 0, "every stage needs at least one replica, got ", replicas);
    ranks.emplace_back();
    for (int r = 0; r < replicas; ++r) ranks.back().push_back(next++);
  }
  return ParallelLayout(std::move(ranks));
}

ParallelLayout ParallelLayout::from_table(std::vector<std::vector<int>> ranks) { return ParallelLayout(std::move(ranks)); }

int ParallelLayout::ranks_needed() const {
  int largest = 0;
  for (const auto& stage : ranks_) largest = std::max(largest, *std::max_element(stage.begin(), stage.end()));
  return largest + 1;
}

std::vector<StagePosition> ParallelLayout::positions(int rank) const {
  std::vector<StagePosition> result;
  for (int stage = 0; stage < stages(); ++stage)
    for (int replica = 0; replica < replicas(stage); ++replica)
      if (ranks_[stage][replica] == rank) result.push_back({stage, replica});
  return result;
}

std::string ParallelLayout::describe() const {
  std::ostringstream out;
  for (int stage = 0; stage < stages(); ++stage) {
    out << (stage ? " | " : "") << "stage " << stage << ": rank" << (replicas(stage) > 1 ? "s" : "");
    for (int rank : ranks_[stage]) out << ' ' << rank;
  }
  return out.str();
}

}  // namespace loom::comm
