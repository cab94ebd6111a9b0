#include <loom/comm/topology.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include <mpi.h>

#include <loom/comm/mpi_session.h>
#include <loom/comm/watchdog.h>
#include <loom/base/error.h>

namespace loom::comm {

namespace {

int parse_positive(std::string_view field, std::string_view text, std::string_view source) {
  int value = 0;
  LOOM_CHECK(!field.empty(), source, ": empty node size in '", text, "'");
  for (char c : field) {
    LOOM_CHECK(c >= '0' && c <= '9', source, ": '", text, "' is not a rank count K or a list of node sizes like 3,3,2");
    value = value * 10 + (c - '0');
    LOOM_CHECK(value <= 1 << 24, source, ": node size '", field, "' is too large");
  }
  LOOM_CHECK(value > 0, source, ": node sizes must be positive, got '", field, "' in '", text, "'");
  return value;
}

// Every world rank's processor name (its host), gathered over MPI_COMM_WORLD.
std::vector<std::string> gather_host_names() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  LOOM_MPI_CHECK(MPI_Get_processor_name(name, &length));
  const int size = comm::world_size();
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  WatchdogScope watch("MPI_Allgather (host names)");
  LOOM_MPI_CHECK(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                               MPI_COMM_WORLD));
  std::vector<std::string> names;
  for (int rank = 0; rank < size; ++rank) names.emplace_back(&all[static_cast<std::size_t>(rank) * MPI_MAX_PROCESSOR_NAME]);
  return names;
}

// "0-3" for consecutive ranks, else "0 2 5".
std::string rank_list(const std::vector<int>& ranks) {
  bool consecutive = ranks.size() > 2;
  for (std::size_t i = 1; i < ranks.size(); ++i) consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
  if (consecutive) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::ostringstream text;
  for (std::size_t i = 0; i < ranks.size(); ++i) text << (i ? " " : "") << ranks[i];
  return text.str();
}

}  // namespace

std::vector<int> parse_node_sizes(std::string_view text, int world_size, std::string_view source) {
  std::vector<int> sizes;
  if (text.find(',') == std::string_view::npos) {
    const int per_node = parse_positive(text, text, source);
    for (int first = 0; first < world_size; first += per_node) sizes.push_back(std::min(per_node, world_size - first));
    return sizes;
  }
  std::size_t start = 0;
  int sum = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view field = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    sizes.push_back(parse_positive(field, text, source));
    sum += sizes.back();
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  LOOM_CHECK(sum == world_size, source, ": node sizes '", text, "' add up to ", sum, " ranks but the job has ",
             world_size);
  return sizes;
}

Topology::Topology(int world_size) : Topology(std::vector<int>(world_size, 0), "single node") {}

Topology::Topology(const std::vector<int>& node_of_rank, std::string source) : source_(std::move(source)) {
  LOOM_CHECK(!node_of_rank.empty(), "a topology needs at least one rank");
  std::map<int, int> renumbered;  // given node id -> index in order of first appearance
  node_of_rank_.reserve(node_of_rank.size());
  for (int rank = 0; rank < static_cast<int>(node_of_rank.size()); ++rank) {
    const auto [it, added] = renumbered.emplace(node_of_rank[rank], static_cast<int>(renumbered.size()));
    if (added) ranks_of_node_.emplace_back();
    node_of_rank_.push_back(it->second);
    ranks_of_node_[it->second].push_back(rank);
  }
}

Topology Topology::from_node_sizes(const std::vector<int>& sizes, std::string source) {
  std::vector<int> node_of_rank;
  for (int node = 0; node < static_cast<int>(sizes.size()); ++node) node_of_rank.insert(node_of_rank.end(), sizes[node], node);
  return Topology(node_of_rank, std::move(source));
}

Topology Topology::detect(std::string_view ranks_per_node) {
  const int size = comm::world_size();
  if (!ranks_per_node.empty()) return from_node_sizes(parse_node_sizes(ranks_per_node, size, "--ranks-per-node"), "--ranks-per-node");
  if (const char* env = std::getenv("LOOM_RANKS_PER_NODE"); env && *env)
    return from_node_sizes(parse_node_sizes(env, size, "LOOM_RANKS_PER_NODE"), "LOOM_RANKS_PER_NODE");
  return physical();
}

Topology Topology::physical() {
  const int size = comm::world_size();
  // Physical nodes: each node is named by the world rank of its shared-memory leader.
  MPI_Comm shared = MPI_COMM_NULL;
  int leader = comm::world_rank();
  std::vector<int> leaders(size);
  {
    WatchdogScope watch("topology detection (MPI_Comm_split_type, MPI_Bcast, MPI_Allgather)");
    LOOM_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, comm::world_rank(), MPI_INFO_NULL, &shared));
    LOOM_MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, shared));
    MPI_Comm_free(&shared);
    LOOM_MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD));
  }
  Topology topology(leaders, "physical");
  const std::vector<std::string> host_of_rank = gather_host_names();
  for (int node = 0; node < topology.nodes(); ++node) topology.host_of_node_.push_back(host_of_rank[topology.ranks_of_node(node).front()]);
  set_watchdog_peer_hosts(host_of_rank);  // its messages then name the host of a silent peer
  return topology;
}

int Topology::local_rank(int rank) const {
  const std::vector<int>& ranks = ranks_of_node(node_of(rank));
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i)
    if (ranks[i] == rank) return i;
  return -1;
}

std::string Topology::host(int node) const {
  LOOM_CHECK(node >= 0 && node < nodes(), "node ", node, " is not in a topology of ", nodes(), " nodes");
  return host_of_node_.empty() ? "node " + std::to_string(node) : host_of_node_[node];
}

std::string Topology::describe_hosts() const {
  std::ostringstream text;
  text << (host_of_node_.empty() ? "nodes: " : "hosts: ");
  for (int node = 0; node < nodes(); ++node) text << (node ? " | " : "") << host(node) << " ranks " << rank_list(ranks_of_node_[node]);
  return text.str();
}

std::string Topology::describe() const {
  std::ostringstream out;
  out << world_size() << (world_size() == 1 ? " rank" : " ranks") << " on " << nodes() << (nodes() == 1 ? " node (" : " nodes (");
  for (int node = 0; node < nodes(); ++node) out << (node ? "+" : "") << ranks_of_node_[node].size();
  out << "), from " << source_;
  return out.str();
}

}  // namespace loom::comm
