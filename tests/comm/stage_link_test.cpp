// Stage-boundary transfers for R_s -> R_{s+1} in 1->1, 1->2, 2->1, 2->3, 3->2 (as far as the world
// size allows): every row of every micro-batch arrives exactly once, in order, at the replica that
// owns it, forward and backward, with shapes that change per micro-batch, several tensors of
// different dtypes, and micro-batches with fewer rows than replicas.
#include <catch2/catch.hpp>

#include <loom/comm/mpi_session.h>
#include <loom/comm/stage_link.h>
#include <loom/core/memory.h>

using namespace loom;
using namespace loom::comm;

namespace {

struct Boundary {
  int upstream;
  int downstream;
};

const std::vector<std::int64_t> kRows{7, 1, 10, 0, 5};  // rows of micro-batches 0..4

std::int64_t sequence_length(std::int64_t microbatch) { return 2 + microbatch % 3; }

float activation_value(std::int64_t microbatch, std::int64_t row, std::int64_t position, std::int64_t feature) {
  return static_cast<float>(microbatch * 100000 + row * 100 + position * 10 + feature);
}

// The rows [begin, end) of micro-batch `microbatch`: a [rows, T, 3] f32 and a [rows] i64.
TensorList make_rows(std::int64_t microbatch, Range rows, double sign) {
  const std::int64_t length = sequence_length(microbatch);
  std::vector<float> values;
  std::vector<std::int64_t> ids;
  for (std::int64_t row = rows.begin; row < rows.end; ++row) {
    ids.push_back(microbatch * 1000 + row);
    for (std::int64_t t = 0; t < length; ++t)
      for (std::int64_t f = 0; f < 3; ++f) values.push_back(static_cast<float>(sign) * activation_value(microbatch, row, t, f));
  }
  return {Tensor::from_vector(values, Shape{rows.size(), length, 3}), Tensor::from_vector(ids, Shape{rows.size()})};
}

void check_rows(const TensorList& received, std::int64_t microbatch, Range rows, double sign) {
  REQUIRE(received.size() == 2);
  const TensorList expected = make_rows(microbatch, rows, sign);
  for (std::size_t t = 0; t < 2; ++t) {
    CHECK(received[t].shape() == expected[t].shape());
    CHECK(received[t].dtype() == expected[t].dtype());
  }
  CHECK(received[0].to_double_vector() == expected[0].to_double_vector());
  CHECK(received[1].to_double_vector() == expected[1].to_double_vector());
}

std::vector<int> ranks_from(int first, int count) {
  std::vector<int> ranks;
  for (int i = 0; i < count; ++i) ranks.push_back(first + i);
  return ranks;
}

}  // namespace

TEST_CASE("every row crosses a stage boundary exactly once, in order") {
  const int size = world_size(), rank = world_rank();
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int link_id = 0;
  for (Boundary boundary : {Boundary{1, 1}, Boundary{1, 2}, Boundary{2, 1}, Boundary{2, 3}, Boundary{3, 2}}) {
    if (boundary.upstream + boundary.downstream > size) continue;
    INFO(boundary.upstream << " -> " << boundary.downstream);
    StageLink link(comm, link_id++, ranks_from(0, boundary.upstream), ranks_from(boundary.upstream, boundary.downstream));
    const bool upstream = rank < boundary.upstream;
    const bool downstream = !upstream && rank < boundary.upstream + boundary.downstream;
    const int replica = upstream ? rank : rank - boundary.upstream;
    const int mb_count = static_cast<int>(kRows.size());

    // Forward: receives are posted for every micro-batch before any data is sent.
    std::vector<PendingReceive> receives;
    if (downstream)
      for (int mb = 0; mb < mb_count; ++mb) receives.push_back(link.post_receive(Direction::forward, mb, kRows[mb]));
    MPI_Barrier(comm);
    if (upstream)
      for (int mb = 0; mb < mb_count; ++mb) {
        const Range mine = StageLink::rows_of(kRows[mb], boundary.upstream, replica);
        link.send(Direction::forward, mb, make_rows(mb, mine, 1.0), kRows[mb]);
      }
    std::int64_t rows_received = 0;
    if (downstream)
      for (int mb = 0; mb < mb_count; ++mb) {
        const Range mine = StageLink::rows_of(kRows[mb], boundary.downstream, replica);
        // Poll a little first: test() posts the data receives once headers are in.
        for (int spin = 0; spin < 3 && !receives[mb].test(); ++spin) {
        }
        check_rows(receives[mb].wait(), mb, mine, 1.0);
        rows_received += mine.size();
      }

    // Backward: gradients go the other way; micro-batches in reverse order, receives posted late.
    if (downstream)
      for (int mb = mb_count - 1; mb >= 0; --mb) {
        const Range mine = StageLink::rows_of(kRows[mb], boundary.downstream, replica);
        link.send(Direction::backward, mb, make_rows(mb, mine, -1.0), kRows[mb]);
      }
    if (upstream)
      for (int mb = mb_count - 1; mb >= 0; --mb) {
        const Range mine = StageLink::rows_of(kRows[mb], boundary.upstream, replica);
        check_rows(link.post_receive(Direction::backward, mb, kRows[mb]).wait(), mb, mine, -1.0);
      }
    link.flush();

    // Across the receiving replicas every row arrived once.
    std::int64_t total = 0;
    MPI_Allreduce(&rows_received, &total, 1, MPI_INT64_T, MPI_SUM, comm);
    std::int64_t expected = 0;
    for (std::int64_t rows : kRows) expected += rows;
    CHECK(total == expected);
    MPI_Barrier(comm);
  }
  MPI_Comm_free(&comm);
}

// Host-staged transfers of device tensors (the sim device standing in for a GPU that ranks share):
// the sender copies its rows device -> host, the receiver gets them back on its device, with the
// received rows charged to the device's communication memory and no host memory kept afterwards.
TEST_CASE("device tensors cross a boundary host-staged", "[device][sim]") {
  const int rank = world_rank();
  const Device sim = Device::sim();
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  {
    StageLink link(comm, 7, {0}, {1});
    const std::int64_t host_before = memory_stats().live(MemoryCategory::communication);
    for (int mb = 0; mb < 3; ++mb) {
      const Range all{0, kRows[mb]};
      if (rank == 0) {
        TensorList rows = make_rows(mb, all, 1.0);
        for (Tensor& t : rows) t = t.to(sim);
        link.send(Direction::forward, mb, rows, kRows[mb]);
      } else if (rank == 1) {
        const std::int64_t device_before = memory_stats(sim).live(MemoryCategory::communication);
        const TensorList received = link.post_receive(Direction::forward, mb, kRows[mb], sim).wait();
        for (const Tensor& t : received) CHECK(t.device() == sim);
        check_rows(received, mb, all, 1.0);
        std::int64_t bytes = 0;
        for (const Tensor& t : received) bytes += static_cast<std::int64_t>(t.nbytes());
        CHECK(memory_stats(sim).live(MemoryCategory::communication) - device_before == bytes);
      }
    }
    link.flush();
    CHECK(memory_stats().live(MemoryCategory::communication) == host_before);
  }
  MPI_Barrier(comm);
  MPI_Comm_free(&comm);
}

// Device-direct transfers (the sim device's stand-in for NCCL: every data message of a link and
// direction has one tag, so messages match by order alone, as ncclSend/ncclRecv do): the rows go
// straight from device memory to device memory, no host copy on either side, and waiting for the
// receives in the reverse order still gives every micro-batch its own rows, because the link
// starts the data receives in the order they were posted.
TEST_CASE("device tensors cross a boundary device-direct, matched by order", "[device][sim]") {
  const int rank = world_rank();
  if (world_size() < 2) return;
  const Device sim = Device::sim();
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  {
    StageLink link(comm, 9, {0}, {1}, make_mpi_transport(comm, sim, true), make_mpi_transport(comm, sim, true));
    CHECK(link.path() == BoundaryPath::device_direct);
    const std::int64_t host_before = memory_stats().live(MemoryCategory::communication);
    const std::int64_t host_peak_before = memory_stats().peak(MemoryCategory::communication);
    if (rank == 0) {
      for (int mb = 0; mb < 3; ++mb) {
        TensorList rows = make_rows(mb, Range{0, kRows[mb]}, 1.0);
        for (Tensor& t : rows) t = t.to(sim);
        link.send(Direction::forward, mb, rows, kRows[mb]);
      }
    } else if (rank == 1) {
      std::vector<PendingReceive> receives;
      for (int mb = 0; mb < 3; ++mb) receives.push_back(link.post_receive(Direction::forward, mb, kRows[mb], sim));
      for (int mb = 2; mb >= 0; --mb) {
        const TensorList received = receives[mb].wait();
        for (const Tensor& t : received) CHECK(t.device() == sim);
        check_rows(received, mb, Range{0, kRows[mb]}, 1.0);
      }
    }
    link.flush();
    CHECK(memory_stats().live(MemoryCategory::communication) == host_before);
    CHECK(memory_stats().peak(MemoryCategory::communication) == host_peak_before);  // never staged through the host
  }
  MPI_Barrier(comm);
  MPI_Comm_free(&comm);
}

// On an ordered boundary the receiver must post receives in the order the peer sends (the
// executor does: both follow the schedule); posting them the other way round is caught by the
// headers' sequence numbers, before any data is matched to the wrong micro-batch.
TEST_CASE("an ordered boundary refuses receives posted out of the sender's order", "[device][sim]") {
  const int rank = world_rank();
  if (world_size() < 2) return;
  const Device sim = Device::sim();
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  {
    StageLink link(comm, 10, {0}, {1}, make_mpi_transport(comm, sim, true), make_mpi_transport(comm, sim, true));
    if (rank == 0) {
      for (int mb = 0; mb < 2; ++mb) {
        TensorList rows = make_rows(mb, Range{0, kRows[mb]}, 1.0);
        for (Tensor& t : rows) t = t.to(sim);
        link.send(Direction::forward, mb, rows, kRows[mb]);
      }
      link.flush();
    } else if (rank == 1) {
      PendingReceive second = link.post_receive(Direction::forward, 1, kRows[1], sim);
      PendingReceive first = link.post_receive(Direction::forward, 0, kRows[0], sim);
      CHECK_THROWS_WITH(second.wait(), Catch::Contains("stage link 10, forward micro-batch 1, from rank 0: transfer 1 "
                                                       "of this direction arrived where 0 was expected"));
    }
  }
  MPI_Barrier(comm);
  MPI_Comm_free(&comm);
}

TEST_CASE("boundary misuse is a clear error") {
  const int size = world_size(), rank = world_rank();
  if (size < 2) return;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  {
    StageLink link(comm, 5, {0}, {1});
    if (rank == 0) {
      // Rows that do not match this replica's share.
      CHECK_THROWS_WITH(link.send(Direction::forward, 0, make_rows(0, Range{0, 3}, 1.0), 4),
                        Catch::Contains("should hold this replica's 4 of 4 rows"));
      CHECK_THROWS_WITH(link.post_receive(Direction::forward, 0, 4), Catch::Contains("does not receive forward"));
    }
  }
  CHECK_THROWS_AS(StageLink(comm, 64, {0}, {1}), Error);
  MPI_Comm_free(&comm);
}

TEST_CASE("a failing rank's link does not wait for receivers that never come") {
  if (world_size() < 2) return;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (world_rank() == 0) {
    bool caught = false;
    try {
      StageLink link(comm, 9, {0}, {1});
      // 4 MB: too large to complete without a matching receive, which rank 1 never posts.
      link.send(Direction::forward, 0, {Tensor::zeros(Shape{1 << 20, 1})}, 1 << 20);
      throw std::runtime_error("a layer failed");
    } catch (const std::runtime_error&) {
      caught = true;  // reached only if ~StageLink returned without waiting
    }
    CHECK(caught);
  }
  MPI_Barrier(comm);
  MPI_Comm_free(&comm);
}
