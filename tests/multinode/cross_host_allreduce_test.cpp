// Allreduce across real (emulated) hosts: run by scripts/cluster/mpirun.sh over network namespaces,
// so loom's topology comes from Open MPI's shared-memory split, ranks on one host talk through
// shared memory and ranks on different hosts through TCP. LOOM_EXPECT_HOSTS and
// LOOM_EXPECT_RANKS_PER_HOST say what the launcher set up; the topology must find exactly that.
// Inputs are multiples of 2^-20, so every summation order gives the exact sum: ring, hierarchical
// and MPI must give the same bits, equal to the sum of all ranks' inputs computed on one rank.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpi.h>

#include <loom/comm/allreduce.h>
#include <loom/comm/mpi_session.h>
#include <loom/comm/topology.h>

#include "../comm/comm_test_support.h"

using namespace loom;
using namespace loom::comm;
using namespace loom::comm::testing;

namespace {

int expected(const char* variable) {
  const char* text = std::getenv(variable);
  INFO(variable << " must be set by the test's launcher");
  REQUIRE(text != nullptr);
  return std::atoi(text);
}

// Every rank's processor name (the host name, which each emulated host has its own of).
std::vector<std::string> host_names() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(static_cast<std::size_t>(world_size()) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> names;
  for (int rank = 0; rank < world_size(); ++rank) names.emplace_back(&all[static_cast<std::size_t>(rank) * MPI_MAX_PROCESSOR_NAME]);
  return names;
}

// The exact sum over all world ranks of their inputs, computed here from every rank's input.
template <typename T>
std::vector<T> one_rank_sum(std::int64_t count, std::uint64_t salt) {
  std::vector<T> sum(count, T{0});
  for (int rank = 0; rank < world_size(); ++rank)
    for (std::int64_t i = 0; i < count; ++i) sum[i] += static_cast<T>(dyadic_value(rank, i, salt));
  return sum;
}

template <typename T>
void check_algorithms_exact(ReduceGroup& group, std::int64_t count, std::uint64_t salt) {
  const std::vector<T> reference = one_rank_sum<T>(count, salt);
  for (AllreduceAlgorithm algorithm : all_algorithms()) {
    INFO(algorithm_name(algorithm) << " of " << count << (sizeof(T) == 4 ? " f32" : " f64"));
    std::vector<T> data(count);
    for (std::int64_t i = 0; i < count; ++i) data[i] = static_cast<T>(dyadic_value(world_rank(), i, salt));
    allreduce(group, data.data(), count, dtype_of<T>::value, ReduceOp::sum, algorithm);
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < count; ++i) wrong += std::memcmp(&data[i], &reference[i], sizeof(T)) != 0;
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_CASE("the topology finds the hosts the launcher made", "[multinode]") {
  const Topology topology = Topology::detect();
  INFO(topology.describe());
  CHECK(topology.source() == "physical");
  REQUIRE(topology.nodes() == expected("LOOM_EXPECT_HOSTS"));
  for (int node = 0; node < topology.nodes(); ++node)
    CHECK(static_cast<int>(topology.ranks_of_node(node).size()) == expected("LOOM_EXPECT_RANKS_PER_HOST"));
  // Ranks share a node exactly when they share a host.
  const std::vector<std::string> names = host_names();
  for (int a = 0; a < world_size(); ++a)
    for (int b = 0; b < world_size(); ++b) {
      INFO("ranks " << a << " on " << names[a] << " and " << b << " on " << names[b]);
      CHECK(topology.same_node(a, b) == (names[a] == names[b]));
    }
}

TEST_CASE("the topology names the hosts", "[multinode]") {
  const Topology topology = Topology::detect();
  const std::vector<std::string> names = host_names();
  std::string expected_text = "hosts: ";
  for (int node = 0; node < topology.nodes(); ++node) {
    const std::vector<int>& ranks = topology.ranks_of_node(node);
    CHECK(topology.host(node) == names[ranks.front()]);
    expected_text += (node ? " | " : "") + names[ranks.front()] + " ranks " +
                     (ranks.size() == 1 ? std::to_string(ranks[0]) : std::to_string(ranks[0]) + " " + std::to_string(ranks[1]));
  }
  if (topology.ranks_of_node(0).size() <= 2) CHECK(topology.describe_hosts() == expected_text);
  // Pretend nodes have no host names.
  const Topology pretend = Topology::from_node_sizes({3, 1});
  CHECK(pretend.describe_hosts() == "nodes: node 0 ranks 0-2 | node 1 ranks 3");
}

TEST_CASE("ring, hierarchical and MPI allreduce give the exact one-rank sum across hosts", "[multinode]") {
  const Topology topology = Topology::detect();
  ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD), topology);
  INFO(topology.describe() << "; group " << group.describe());
  for (std::int64_t count : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1009}, (std::int64_t{1} << 18) + 3}) {
    check_algorithms_exact<float>(group, count, static_cast<std::uint64_t>(count));
    check_algorithms_exact<double>(group, count, static_cast<std::uint64_t>(count) + 1);
  }
}
