// The NCCL backend: every allreduce algorithm on CUDA buffers against the same reduction on the
// host. Needs GPUs; without them (or in a build without CUDA) it says so and exits with 77, which
// ctest reports as skipped.
#include <cstdio>
#include <cstdlib>

#include <catch2/catch.hpp>

#include <loom/comm/allreduce.h>
#include <loom/comm/runtime.h>
#include <loom/core/device.h>
#include <loom/core/tensor.h>

using namespace loom;
using namespace loom::comm;

TEST_CASE("NCCL allreduce matches the MPI one") {
  if (!cuda_compiled() || cuda_device_count() == 0) {
    std::printf("skipped: no GPU (%s)\n", cuda_compiled() ? "no CUDA device" : "built without CUDA");
    std::fflush(stdout);
    std::exit(77);
  }
  const int rank = world_rank();
  const Device device = Device::cuda(rank % cuda_device_count());
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
