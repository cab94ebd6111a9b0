// The NCCL backend: every allreduce algorithm on CUDA buffers against the same reduction on the
// host, and stage-boundary transfers over NCCL send/receive against the rows sent ([np2], two
// ranks); and NCCL in a group of one ([np1], comm_nccl_test_np1), so that a machine with one GPU
// runs NCCL at all. Needs a GPU per rank (NCCL puts at most one rank of a communicator on a GPU);
// without them (or in a build without CUDA) it says so and exits with 77, which ctest reports as
// skipped.
#include <cstdio>
#include <cstdlib>

#include <catch2/catch.hpp>

#include <loom/comm/allreduce.h>
#include <loom/comm/boundary_transport.h>
#ifdef LOOM_WITH_CUDA
#include <loom/comm/nccl_group.h>
#endif
#include <loom/comm/mpi_session.h>
#include <loom/comm/stage_link.h>
#include <loom/core/device.h>
#include <loom/core/tensor.h>

using namespace loom;
using namespace loom::comm;

namespace {

// Exits with 77 (skipped) unless every rank has a GPU of its own.
void require_a_gpu_per_rank() {
  if (cuda_compiled() && cuda_device_count() >= world_size()) return;
  std::printf("skipped: needs a GPU per rank (%s)\n",
              !cuda_compiled() ? "built without CUDA" : cuda_device_count() == 0 ? "no CUDA device" : "too few GPUs");
  std::fflush(stdout);
  std::exit(77);
}

}  // namespace

TEST_CASE("NCCL allreduce matches the MPI one", "[np2]") {
  require_a_gpu_per_rank();
  const int rank = world_rank();
  const Device device = Device::cuda(rank);
  const Topology topology = Topology::detect();
  ReduceGroup host(make_communicator(Backend::mpi, MPI_COMM_WORLD), topology);
  ReduceGroup gpu(make_communicator(Backend::nccl, MPI_COMM_WORLD, device), topology);
  for (std::int64_t count : {1, 1009, (1 << 20) + 3})
    for (AllreduceAlgorithm algorithm : all_algorithms()) {
      INFO(algorithm_name(algorithm) << " of " << count);
      std::vector<float> values(count);
      for (std::int64_t i = 0; i < count; ++i) values[i] = static_cast<float>((i * 7 + rank * 13) % 101) / 64.0f;
      Tensor expected = Tensor::from_vector(values, Shape{count});
      allreduce(host, expected, ReduceOp::average, AllreduceAlgorithm::mpi);
      Tensor on_device = Tensor::from_vector(values, Shape{count}).to(device);
      allreduce(gpu, on_device, ReduceOp::average, algorithm);
      const std::vector<float> got = on_device.to_float_vector();
      const std::vector<float> want = expected.to_float_vector();
      double worst = 0;
      for (std::int64_t i = 0; i < count; ++i) worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
      CHECK(worst <= 1e-5);
    }
}

// Rank 0 sends rank 1 three micro-batches of two tensors (f32 activations whose shape changes per
// micro-batch, and i64 ids) forward over NCCL, rank 1 returns them negated backward; received
// straight into device memory, waited for in reverse order, every value exact.
TEST_CASE("a stage boundary over NCCL send/receive", "[np2]") {
  require_a_gpu_per_rank();
  const int rank = world_rank();
  const Device device = Device::cuda(rank);
  MPI_Comm comm = MPI_COMM_NULL, members = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_split(comm, rank < 2 ? 0 : MPI_UNDEFINED, rank, &members);
  if (members == MPI_COMM_NULL) return;
  {
    StageLink link(comm, 0, {0}, {1}, make_nccl_transport(members, device), make_nccl_transport(members, device));
    CHECK(link.path() == BoundaryPath::device_direct);
    auto rows_of = [&](int mb, double sign) {
      const std::int64_t rows = 3 + mb, width = 2 + mb;
      std::vector<float> values;
      std::vector<std::int64_t> ids;
      for (std::int64_t r = 0; r < rows; ++r) {
        ids.push_back(mb * 100 + r);
        for (std::int64_t c = 0; c < width; ++c) values.push_back(static_cast<float>(sign * (mb * 1000 + r * 10 + c)));
      }
      return TensorList{Tensor::from_vector(values, Shape{rows, width}).to(device),
                        Tensor::from_vector(ids, Shape{rows}).to(device)};
    };
    const Direction out = rank == 0 ? Direction::forward : Direction::backward;
    const Direction in = rank == 0 ? Direction::backward : Direction::forward;
    std::vector<PendingReceive> receives;
    for (int mb = 0; mb < 3; ++mb) receives.push_back(link.post_receive(in, mb, 3 + mb, device));
    for (int mb = 0; mb < 3; ++mb) link.send(out, mb, rows_of(mb, rank == 0 ? 1.0 : -1.0), 3 + mb);
    for (int mb = 2; mb >= 0; --mb) {
      const TensorList got = receives[mb].wait();
      const TensorList want = rows_of(mb, rank == 0 ? -1.0 : 1.0);
      REQUIRE(got.size() == 2);
      CHECK(got[0].device() == device);
      CHECK(got[0].to_float_vector() == want[0].to_float_vector());
      CHECK(got[1].to_double_vector() == want[1].to_double_vector());
    }
    link.flush();
  }
  MPI_Comm_free(&members);
  MPI_Comm_free(&comm);
}

// One rank: an allreduce (scaled), a reduce-scatter and an all-gather in place, then a send and a
// receive to itself in one group on a stage-boundary transport. Each still calls NCCL (there is no
// size-1 shortcut: nccl_operations() counts five), and the values are what one member gives.
TEST_CASE("NCCL in a group of one", "[np1]") {
  require_a_gpu_per_rank();
#ifdef LOOM_WITH_CUDA
  REQUIRE(world_size() == 1);
  const Device device = Device::cuda(0);
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 4.0f};
  const std::vector<float> halves = {0.75f, -1.0f, 1.625f, 2.0f};
  const std::int64_t before = nccl_operations();
  {
    auto nccl = make_communicator(Backend::nccl, MPI_COMM_WORLD, device);
    Tensor data = Tensor::from_vector(values, Shape{4}).to(device);
    nccl->allreduce(data.raw_data(), 4, DType::f32, 0.5);
    CHECK(data.to_float_vector() == halves);
    nccl->reduce_scatter(data.raw_data(), RangeSplit::even(4, 1), DType::f32);
    CHECK(data.to_float_vector() == halves);
    nccl->allgather(data.raw_data(), RangeSplit::even(4, 1), DType::f32);
    CHECK(data.to_float_vector() == halves);
  }
  std::unique_ptr<BoundaryTransport> transport = make_nccl_transport(MPI_COMM_WORLD, device);
  const Tensor sent = Tensor::from_vector(values, Shape{4}).to(device);
  Tensor received = Tensor::zeros(Shape{4}, DType::f32, device);
  std::vector<Transfer> both = {{sent, world_rank(), true}, {received, world_rank(), false}};
  transport->start(std::move(both))->wait("NCCL send to itself", world_rank());
  CHECK(received.to_float_vector() == values);
  CHECK(nccl_operations() - before == 5);
#endif
}
