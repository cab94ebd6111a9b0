// Which node each world rank runs on.
//
// Physical nodes come from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). An override makes one
// machine act as several nodes so the hierarchical paths run in tests and benchmarks:
// `--ranks-per-node K` or LOOM_RANKS_PER_NODE=K cuts the world into consecutive blocks of K ranks
// (the last block keeps the remainder), and a list such as "3,3,2" gives every node's size
// (uneven nodes). Nodes are numbered in the order of their lowest world rank. Physical nodes also
// carry their host names (MPI_Get_processor_name), which describe_hosts() and the watchdog's
// messages use.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom::comm {

class Topology {
 public:
  // Every rank on node 0.
  explicit Topology(int world_size = 1);
  // Node index of every world rank; renumbered by lowest rank.
  explicit Topology(const std::vector<int>& node_of_rank, std::string source = "given");
  // Consecutive blocks of the given sizes.
  static Topology from_node_sizes(const std::vector<int>& sizes, std::string source = "given");
  // Collective over MPI_COMM_WORLD: the override if non-empty, else LOOM_RANKS_PER_NODE if set,
  // else the physical nodes.
  static Topology detect(std::string_view ranks_per_node = "");
  // Collective over MPI_COMM_WORLD: the physical nodes, whatever the override (GPUs are picked by
  // the local rank on the real machine).
  static Topology physical();

  int world_size() const { return static_cast<int>(node_of_rank_.size()); }
  int nodes() const { return static_cast<int>(ranks_of_node_.size()); }
  int node_of(int rank) const { return node_of_rank_.at(rank); }
  int local_rank(int rank) const;  // index of `rank` among the ranks of its node
  const std::vector<int>& ranks_of_node(int node) const { return ranks_of_node_.at(node); }
  bool same_node(int a, int b) const { return node_of(a) == node_of(b); }
  const std::string& source() const { return source_; }  // "physical", "LOOM_RANKS_PER_NODE", ...
  std::string describe() const;  // "8 ranks on 3 nodes (3+3+2), from LOOM_RANKS_PER_NODE"
  // The host name of a node ("node N" where nodes are pretend ones).
  std::string host(int node) const;
  // One entry per node, for start-up logs: "hosts: loomh1 ranks 0-1 | loomh2 ranks 2-3".
  std::string describe_hosts() const;

 private:
  std::vector<int> node_of_rank_;
  std::vector<std::vector<int>> ranks_of_node_;
  std::vector<std::string> host_of_node_;  // empty unless physical
  std::string source_;
};

// Parses "K" (blocks of K ranks) or "a,b,c" (node sizes summing to world_size). Errors name `source`.
std::vector<int> parse_node_sizes(std::string_view text, int world_size, std::string_view source);

}  // namespace loom::comm
