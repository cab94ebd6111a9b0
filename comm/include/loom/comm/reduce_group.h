// The ranks that reduce gradients together (the replicas of one stage), with their node structure.
//
// The hierarchical allreduce cuts a buffer into `shards()` even shards, one per member of the
// fullest node (G = most members on one node). On a node with g members, member l owns the shards
// even_split(G, g, l) (one each when g == G). Each shard is reduced inside the node, then across
// nodes among the members that own it (one inter-node communicator per shard, every local member
// working in parallel), then gathered inside the node again. Uneven nodes work: a member of a
// smaller node owns several shards and joins several inter-node communicators, in shard order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/comm/range_split.h>
#include <loom/comm/topology.h>

namespace loom::comm {

class ReduceGroup {
 public:
  // Collective over the members of `members`.
  ReduceGroup(std::unique_ptr<Communicator> members, const Topology& topology);

  Communicator& members() { return *members_; }
  int size() const { return members_->size(); }
  int rank() const { return members_->rank(); }
  int nodes() const { return static_cast<int>(node_sizes_.size()); }
  const std::vector<int>& node_sizes() const { return node_sizes_; }  // members per node, in node order

  // Members on this rank's node (size 1 when it is alone there).
  Communicator& intra() { return *intra_; }
  int shards() const { return shards_; }
  Range owned_shards() const { return owned_; }
  // Owners of `shard` on every node; `shard` must be one of owned_shards().
  Communicator& inter(int shard);
  // Where each member of intra() starts in a buffer of `count` elements cut into shards().
  RangeSplit intra_partition(std::int64_t count) const;

  std::string describe() const;  // "4 ranks on 2 nodes (2+2), 2 shards"

 private:
  std::unique_ptr<Communicator> members_;
  std::unique_ptr<Communicator> intra_;
  std::vector<std::unique_ptr<Communicator>> inter_;  // one per owned shard
  std::vector<int> node_sizes_;
  int shards_ = 1;
  Range owned_;
};

}  // namespace loom::comm
