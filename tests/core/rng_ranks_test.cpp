// Ranks generate disjoint pieces of one logical stream; gathered, they equal rank 0's whole.
#include <catch2/catch.hpp>

#include <mpi.h>

#include <loom/core/rng.h>

using namespace loom;

TEST_CASE("every rank generates the same values for the same (seed, key, index)", "[rng][mpi]") {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int per_rank = 97;
  const std::uint64_t key = rng::stream_key("layers.0.weight", 0);
  Tensor mine = Tensor::empty({per_rank});
  rng::uniform(mine, 1234, key, -1.0, 1.0, static_cast<std::uint64_t>(rank) * per_rank);
  std::vector<float> gathered(static_cast<std::size_t>(per_rank) * size);
  MPI_Allgather(mine.data<float>(), per_rank, MPI_FLOAT, gathered.data(), per_rank, MPI_FLOAT, MPI_COMM_WORLD);
  Tensor whole = Tensor::empty({per_rank * size});
  rng::uniform(whole, 1234, key, -1.0, 1.0);
  CHECK(whole.to_float_vector() == gathered);
  MPI_Finalize();
}
