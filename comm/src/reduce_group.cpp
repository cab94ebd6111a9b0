#include <loom/comm/reduce_group.h>

#include <algorithm>
#include <map>
#include <sstream>

#include <loom/base/error.h>

namespace loom::comm {

ReduceGroup::ReduceGroup(std::unique_ptr<Communicator> members, const Topology& topology) : members_(std::move(members)) {
  LOOM_CHECK(members_ != nullptr, "a reduce group needs a communicator");
  // Nodes in order of their first member; members of a node in member order.
  std::map<int, int> node_index;
  std::vector<int> node_of_member(size());
  for (int member = 0; member < size(); ++member) {
    const int node = topology.node_of(members_->world_rank_of(member));
    const auto [it, added] = node_index.emplace(node, static_cast<int>(node_index.size()));
    if (added) node_sizes_.push_back(0);
    node_of_member[member] = it->second;
    ++node_sizes_[it->second];
  }
  const int my_node = node_of_member[rank()];
  int local = 0;
  for (int member = 0; member < rank(); ++member) local += node_of_member[member] == my_node;

  shards_ = *std::max_element(node_sizes_.begin(), node_sizes_.end());
  owned_ = even_split(shards_, node_sizes_[my_node], local);
  intra_ = members_->split(my_node, rank());
  for (int shard = 0; shard < shards_; ++shard) {
    const bool owner = shard >= owned_.begin && shard < owned_.end;
    auto inter = members_->split(owner ? 0 : -1, my_node);
    if (owner) inter_.push_back(std::move(inter));
  }
}

Communicator& ReduceGroup::inter(int shard) {
  LOOM_CHECK(shard >= owned_.begin && shard < owned_.end, "rank does not own shard ", shard, " of its reduce group");
  return *inter_[shard - owned_.begin];
}

RangeSplit ReduceGroup::intra_partition(std::int64_t count) const {
  const RangeSplit shards = RangeSplit::even(count, shards_);
  const int members = intra_->size();
  std::vector<std::int64_t> offsets(members + 1);
  for (int local = 0; local < members; ++local) offsets[local] = shards.part(static_cast<int>(even_split(shards_, members, local).begin)).begin;
  offsets[members] = count;
  return RangeSplit(std::move(offsets));
}

std::string ReduceGroup::describe() const {
  std::ostringstream out;
  out << size() << (size() == 1 ? " rank" : " ranks") << " on " << nodes() << (nodes() == 1 ? " node (" : " nodes (");
  for (int node = 0; node < nodes(); ++node) out << (node ? "+" : "") << node_sizes_[node];
  out << "), " << shards_ << (shards_ == 1 ? " shard" : " shards");
  return out.str();
}

}  // namespace loom::comm
