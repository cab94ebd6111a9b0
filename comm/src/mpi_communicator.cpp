#include <loom/comm/mpi_communicator.h>

#include <cstdlib>

#include <loom/comm/watchdog.h>
#include <loom/core/env.h>
#include <loom/core/memory.h>

#include "host_reduce.h"
#include "mpi_types.h"

namespace loom::comm {

RingOptions default_ring_options() {
  RingOptions ring;
  const long long kb = env_count("LOOM_RING_SEGMENT_KB", 0, 1 << 22);  // at most 4 GiB segments
  if (kb > 0) ring.segment_bytes = kb * 1024;
  return ring;
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, RingOptions ring) : Communicator(comm) { set_ring_options(ring); }

void MpiCommunicator::set_ring_options(const RingOptions& ring) {
  LOOM_CHECK(ring.segment_bytes >= 64 && ring.window >= 1, "ring options: segment of ", ring.segment_bytes,
             " bytes, window of ", ring.window);
  ring_ = ring;
}

void MpiCommunicator::allreduce(void* data, std::int64_t count, DType dtype, double scale) {
  detail::reducible_size(dtype);
  if (count == 0) return;
  if (size() > 1) {
    WatchdogScope watch("MPI_Allreduce");
    LOOM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, detail::mpi_count(count), detail::mpi_datatype(dtype), MPI_SUM,
                                 mpi_comm()));
  }
  detail::scale(data, count, dtype, scale);
}

void MpiCommunicator::broadcast(void* data, std::int64_t count, DType dtype, int root) {
  if (count == 0 || size() == 1) return;
  WatchdogScope watch("MPI_Bcast", world_rank_of(root));
  LOOM_MPI_CHECK(MPI_Bcast(data, detail::mpi_count(count), detail::mpi_datatype(dtype), root, mpi_comm()));
}

void MpiCommunicator::barrier() {
  if (size() == 1) return;
  WatchdogScope watch("MPI_Barrier");
  LOOM_MPI_CHECK(MPI_Barrier(mpi_comm()));
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  WatchdogScope watch("MPI_Comm_split");
  LOOM_MPI_CHECK(MPI_Comm_split(mpi_comm(), color >= 0 ? color : MPI_UNDEFINED, key, &part));
  if (part == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(part, ring_);
}

char* MpiCommunicator::scratch(std::size_t bytes) {
  if (!scratch_.defined() || scratch_.nbytes() < bytes) {
    scratch_ = Tensor();
    MemoryCategoryScope category(MemoryCategory::communication);
    scratch_ = Tensor::empty(Shape{static_cast<std::int64_t>((bytes + 7) / 8)}, DType::f64);
  }
  return static_cast<char*>(scratch_.raw_data());
}

}  // namespace loom::comm
