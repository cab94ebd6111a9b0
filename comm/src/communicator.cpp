#include <loom/comm/communicator.h>

#include <loom/comm/mpi_communicator.h>
#include <loom/comm/mpi_session.h>
#include <loom/comm/watchdog.h>
#include <loom/base/error.h>
#ifdef LOOM_WITH_CUDA
#include <loom/comm/nccl_communicator.h>
#endif

namespace loom::comm {

std::string_view backend_name(Backend backend) { return backend == Backend::mpi ? "mpi" : "nccl"; }

Backend parse_backend(std::string_view name) {
  if (name == "mpi") return Backend::mpi;
  if (name == "nccl") return Backend::nccl;
  LOOM_THROW("unknown communication backend '", name, "' (expected mpi or nccl)");
}

Communicator::Communicator(MPI_Comm comm) : comm_(comm) {
  LOOM_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  LOOM_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  world_ranks_.resize(size_);
  const int mine = world_rank();
  WatchdogScope watch("MPI_Allgather (communicator set-up)");
  LOOM_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, world_ranks_.data(), 1, MPI_INT, comm_));
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::unique_ptr<Communicator> make_communicator(Backend backend, MPI_Comm comm, Device device) {
  ensure_mpi();
  MPI_Comm duplicate = MPI_COMM_NULL;
  {
    WatchdogScope watch("MPI_Comm_dup");
    LOOM_MPI_CHECK(MPI_Comm_dup(comm, &duplicate));
  }
  if (backend == Backend::mpi) {
    LOOM_CHECK(device.is_cpu(), "the MPI communicator moves host memory; ", device.str(), " tensors need the nccl backend");
    return std::make_unique<MpiCommunicator>(duplicate);
  }
#ifdef LOOM_WITH_CUDA
  LOOM_CHECK(device.is_cuda(), "the NCCL communicator moves CUDA memory, not ", device.str());
  return std::make_unique<NcclCommunicator>(duplicate, device);
#else
  MPI_Comm_free(&duplicate);
  LOOM_THROW("the nccl backend needs a build with CUDA (configure with -DLOOM_CUDA=ON)");
#endif
}

}  // namespace loom::comm
