// Process groups from a parallel layout on 8 ranks: the default stage-major layout, an explicit
// rank table that spreads each stage over two nodes, an interleaved table (a rank in two stages)
// with idle ranks, and a gradient allreduce plus a boundary transfer through the groups.
#include <catch2/catch.hpp>

#include <loom/comm/allreduce.h>
#include <loom/comm/process_groups.h>
#include <loom/comm/mpi_session.h>

using namespace loom;
using namespace loom::comm;

TEST_CASE("ParallelLayout: default, consecutive and explicit tables") {
  const ParallelLayout uniform = ParallelLayout::uniform(2, 4);
  CHECK(uniform.rank(1, 2) == 6);  // stage * R + replica
  CHECK(uniform.ranks_needed() == 8);
  CHECK(uniform.describe() == "stage 0: ranks 0 1 2 3 | stage 1: ranks 4 5 6 7");
  const ParallelLayout uneven = ParallelLayout::consecutive({1, 2, 3, 2});
  CHECK(uneven.stage_ranks(2) == std::vector<int>{3, 4, 5});
  const ParallelLayout interleaved = ParallelLayout::from_table({{0, 1}, {2, 3}, {0, 1}, {2, 3}});
  REQUIRE(interleaved.positions(1).size() == 2);
  CHECK(interleaved.positions(1)[1].stage == 2);
  CHECK(interleaved.positions(1)[1].replica == 1);
  CHECK(interleaved.positions(7).empty());
  CHECK_THROWS_WITH(ParallelLayout::from_table({{0, 0}}), Catch::Contains("lists rank 0 twice"));
  CHECK_THROWS_WITH(ParallelLayout::from_table({{0}, {}}), Catch::Contains("stage 1 of the layout has no ranks"));
}

TEST_CASE("groups of the default layout on 2 nodes of 4") {
  if (world_size() != 8) return;
  const int rank = world_rank();
  ProcessGroups groups(ParallelLayout::uniform(2, 4), Topology::from_node_sizes({4, 4}));
  REQUIRE(groups.positions().size() == 1);
  const int stage = rank / 4;
  CHECK(groups.positions()[0].stage == stage);
  CHECK(groups.positions()[0].replica == rank % 4);
  CHECK(groups.world().size() == 8);
  CHECK(groups.stage(stage).size() == 4);
  CHECK(groups.stage(stage).rank() == rank % 4);
  ReduceGroup& replicas = groups.replicas(stage);
  CHECK(replicas.size() == 4);
  CHECK(replicas.nodes() == 1);  // a stage's four replicas share a node
  CHECK_THROWS_AS(groups.replicas(1 - stage), Error);

  std::vector<double> gradient(10, rank);
  allreduce(replicas, gradient.data(), 10, DType::f64, ReduceOp::average, AllreduceAlgorithm::hierarchical);
  CHECK(gradient[9] == (stage == 0 ? 1.5 : 5.5));
}

TEST_CASE("an explicit table spreads a stage over two nodes") {
  if (world_size() != 8) return;
  const int rank = world_rank();
  // Stage 0 on ranks 0 1 4 5 (two per node), stage 1 on ranks 2 3 6 7.
  ProcessGroups groups(ParallelLayout::from_table({{0, 1, 4, 5}, {2, 3, 6, 7}}), Topology::from_node_sizes({4, 4}));
  const int stage = (rank % 4) / 2;
  ReduceGroup& replicas = groups.replicas(stage);
  CHECK(replicas.nodes() == 2);
  CHECK(replicas.intra().size() == 2);
  CHECK(replicas.shards() == 2);
  CHECK(replicas.inter(static_cast<int>(replicas.owned_shards().begin)).size() == 2);
  std::vector<float> gradient(1001, static_cast<float>(rank));
  allreduce(replicas, gradient.data(), 1001, DType::f32, ReduceOp::sum, AllreduceAlgorithm::hierarchical);
  CHECK(gradient[1000] == (stage == 0 ? 10.0f : 18.0f));

  // Activations of a micro-batch of 6 rows, replica r of stage 0 -> replica r of stage 1.
  StageLink& link = groups.link(0);
  const int replica = groups.positions()[0].replica;
  const Range mine = StageLink::rows_of(6, 4, replica);
  if (stage == 0) {
    std::vector<float> rows;
    for (std::int64_t row = mine.begin; row < mine.end; ++row) rows.push_back(static_cast<float>(row));
    link.send(Direction::forward, 3, {Tensor::from_vector(rows, Shape{mine.size(), 1})}, 6);
    link.flush();
  } else {
    const TensorList received = link.post_receive(Direction::forward, 3, 6).wait();
    REQUIRE(received.size() == 1);
    std::vector<double> expected;
    for (std::int64_t row = mine.begin; row < mine.end; ++row) expected.push_back(static_cast<double>(row));
    CHECK(received[0].to_double_vector() == expected);
  }
}

TEST_CASE("interleaved stages and idle ranks") {
  if (world_size() != 8) return;
  const int rank = world_rank();
  ProcessGroups groups(ParallelLayout::from_table({{0, 1}, {2, 3}, {0, 1}, {2, 3}}), Topology(8));
  if (rank >= 4) {
    CHECK(groups.positions().empty());
    CHECK_THROWS_AS(groups.link(0), Error);
    return;
  }
  REQUIRE(groups.positions().size() == 2);
  const int first = groups.positions()[0].stage;
  CHECK(groups.positions()[1].stage == first + 2);
  CHECK(groups.replicas(first).size() == 2);
  CHECK(groups.replicas(first + 2).size() == 2);
  // Ranks 0-1 are on both sides of boundary 1 -> 2 and boundary 0 -> 1.
  CHECK(groups.link(1).upstream() == std::vector<int>{2, 3});
  CHECK(groups.link(1).downstream() == std::vector<int>{0, 1});
  CHECK_NOTHROW(groups.link(0));
  CHECK_NOTHROW(groups.link(2));
}
