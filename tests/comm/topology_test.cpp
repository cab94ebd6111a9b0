// Node layouts: the --ranks-per-node / LOOM_RANKS_PER_NODE parser, explicit layouts, and detection
// under mpiexec (physical nodes, or the environment override when the test sets one); the device
// placement built on them (who shares a device, where NCCL can connect ranks).
#include <cstdlib>

#include <catch2/catch.hpp>

#include <loom/comm/device_placement.h>
#include <loom/comm/mpi_session.h>
#include <loom/comm/topology.h>
#include <loom/base/error.h>

using namespace loom::comm;

TEST_CASE("parse_node_sizes: blocks of K and explicit lists") {
  CHECK(parse_node_sizes("4", 8, "test") == std::vector<int>{4, 4});
  CHECK(parse_node_sizes("3", 8, "test") == std::vector<int>{3, 3, 2});
  CHECK(parse_node_sizes("1", 3, "test") == std::vector<int>{1, 1, 1});
  CHECK(parse_node_sizes("16", 3, "test") == std::vector<int>{3});
  CHECK(parse_node_sizes("3,3,2", 8, "test") == std::vector<int>{3, 3, 2});
  CHECK(parse_node_sizes("1,7", 8, "test") == std::vector<int>{1, 7});
}

TEST_CASE("parse_node_sizes: bad input names its source and the problem") {
  auto message = [](const char* text, int world) {
    try {
      parse_node_sizes(text, world, "LOOM_RANKS_PER_NODE");
    } catch (const loom::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message("0", 4), Catch::Contains("LOOM_RANKS_PER_NODE") && Catch::Contains("positive"));
  CHECK_THAT(message("two", 4), Catch::Contains("LOOM_RANKS_PER_NODE") && Catch::Contains("'two'"));
  CHECK_THAT(message("3,3", 8), Catch::Contains("add up to 6 ranks but the job has 8"));
  CHECK_THAT(message("3,,5", 8), Catch::Contains("empty node size"));
  CHECK_THAT(message("-2", 4), Catch::Contains("LOOM_RANKS_PER_NODE"));
}

TEST_CASE("Topology from node sizes and from a node map") {
  const Topology t = Topology::from_node_sizes({3, 3, 2});
  REQUIRE(t.world_size() == 8);
  CHECK(t.nodes() == 3);
  CHECK(t.node_of(2) == 0);
  CHECK(t.node_of(3) == 1);
  CHECK(t.node_of(7) == 2);
  CHECK(t.local_rank(4) == 1);
  CHECK(t.ranks_of_node(2) == std::vector<int>{6, 7});
  CHECK(t.same_node(6, 7));
  CHECK_FALSE(t.same_node(2, 3));
  CHECK(t.describe() == "8 ranks on 3 nodes (3+3+2), from given");

  // Interleaved node ids are renumbered by lowest rank.
  const Topology m({5, 9, 5, 9});
  CHECK(m.nodes() == 2);
  CHECK(m.ranks_of_node(0) == std::vector<int>{0, 2});
  CHECK(m.ranks_of_node(1) == std::vector<int>{1, 3});
  CHECK(m.local_rank(3) == 1);
}

TEST_CASE("Topology::detect: the argument beats the environment, which beats the hardware") {
  const int size = world_size();
  const Topology explicit_layout = Topology::detect("1");
  CHECK(explicit_layout.nodes() == size);
  CHECK(explicit_layout.source() == "--ranks-per-node");

  const Topology detected = Topology::detect();
  CHECK(detected.world_size() == size);
  if (const char* env = std::getenv("LOOM_RANKS_PER_NODE"); env && *env) {
    CHECK(detected.source() == "LOOM_RANKS_PER_NODE");
    const std::vector<int> sizes = parse_node_sizes(env, size, "LOOM_RANKS_PER_NODE");
    REQUIRE(detected.nodes() == static_cast<int>(sizes.size()));
    for (int node = 0; node < detected.nodes(); ++node)
      CHECK(static_cast<int>(detected.ranks_of_node(node).size()) == sizes[node]);
  } else {
    // mpiexec on one machine: every rank shares memory with every other.
    CHECK(detected.source() == "physical");
    CHECK(detected.nodes() == 1);
  }
}

TEST_CASE("DevicePlacement: who shares a device, and where NCCL can connect ranks") {
  using loom::Device;
  // Two nodes of 3 ranks; node 0 has two GPUs (ranks 0 and 2 share cuda:0), node 1 three.
  const DevicePlacement gpus({0, 0, 0, 1, 1, 1}, {Device::cuda(0), Device::cuda(1), Device::cuda(0), Device::cuda(0),
                                                  Device::cuda(1), Device::cuda(2)});
  CHECK(gpus.sharing(0) == 2);
  CHECK(gpus.sharing(2) == 2);
  CHECK(gpus.sharing(1) == 1);
  CHECK(gpus.sharing(3) == 1);  // cuda:0 of node 1 is another GPU than cuda:0 of node 0
  CHECK(gpus.direct_obstacle({0, 1, 3, 4}).empty());
  CHECK(gpus.direct_obstacle({0, 3}).empty());
  CHECK(gpus.direct_obstacle({1, 0, 5, 2}) == "ranks 0 and 2 share cuda:0 of node 0");
  const DevicePlacement host({0, 0, 1}, {Device::cpu(), Device::cpu(), Device::cpu()});
  CHECK(host.sharing(0) == 2);
  CHECK(host.sharing(2) == 1);
  CHECK(host.direct_obstacle({0, 2}) == "the ranks compute on cpu, not on a device");
  const DevicePlacement sims({0, 0, 0}, {Device::sim(0), Device::sim(1), Device::sim(0)});
  CHECK(sims.direct_obstacle({0, 1}).empty());
  CHECK(sims.direct_obstacle({0, 1, 2}) == "ranks 0 and 2 share sim:0 of node 0");
  CHECK_THROWS_WITH(DevicePlacement({0, 1}, {Device::cpu()}), Catch::Contains("2 nodes for 1 devices"));
}

TEST_CASE("DevicePlacement::gather: every rank's device on the physical nodes") {
  ensure_mpi();
  const Topology machine = Topology::physical();
  const DevicePlacement placement = DevicePlacement::gather(machine, loom::Device::sim(world_rank() % 2));
  REQUIRE(placement.world_size() == world_size());
  for (int r = 0; r < world_size(); ++r) {
    CHECK(placement.device_of(r) == loom::Device::sim(r % 2));
    CHECK(placement.node_of(r) == machine.node_of(r));
  }
}
