// The MPI transport of stage-boundary data (see boundary_transport.h); NCCL's is nccl_transport.cpp.
#include <loom/comm/boundary_transport.h>

#include <loom/comm/watchdog.h>
#include <loom/base/error.h>

#include "mpi_types.h"
#include "nccl_transport.h"

namespace loom::comm {

const char* boundary_path_name(BoundaryPath path) {
  switch (path) {
    case BoundaryPath::host_staged: return "host-staged";
    case BoundaryPath::device_direct: return "device-direct";
    case BoundaryPath::local: return "local";
  }
  return "?";
}

TransferGroup::~TransferGroup() = default;
BoundaryTransport::~BoundaryTransport() = default;

namespace {

class MpiTransferGroup final : public TransferGroup {
 public:
  MpiTransferGroup(std::vector<Transfer> transfers, MPI_Comm comm) : transfers_(std::move(transfers)) {
    requests_.reserve(transfers_.size());
    for (const Transfer& t : transfers_) {
      MPI_Request& request = requests_.emplace_back(MPI_REQUEST_NULL);
      const int count = detail::mpi_count(t.tensor.numel());
      const MPI_Datatype type = detail::mpi_datatype(t.tensor.dtype());
      if (t.send)
        LOOM_MPI_CHECK(MPI_Isend(t.tensor.raw_data(), count, type, t.peer, t.tag, comm, &request));
      else
        LOOM_MPI_CHECK(MPI_Irecv(t.tensor.raw_data(), count, type, t.peer, t.tag, comm, &request));
    }
  }
  ~MpiTransferGroup() override {
    // A group dropped before completion (a failing rank): receives are cancelled so MPI does not
    // write into freed memory; sends are left to MPI.
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] == MPI_REQUEST_NULL) continue;
      if (!transfers_[i].send) MPI_Cancel(&requests_[i]);
      MPI_Request_free(&requests_[i]);
    }
  }
  MpiTransferGroup(const MpiTransferGroup&) = delete;
  MpiTransferGroup& operator=(const MpiTransferGroup&) = delete;

  bool test() override {
    int done = 1;
    LOOM_MPI_CHECK(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE));
    return done != 0;
  }
  void wait(const char* what, int peer) override {
    WatchdogScope watch(what, peer);
    LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  }

 private:
  std::vector<Transfer> transfers_;  // keeps the buffers alive
  std::vector<MPI_Request> requests_;
};

class MpiTransport final : public BoundaryTransport {
 public:
  MpiTransport(MPI_Comm comm, Device memory, bool ordered) : comm_(comm), memory_(memory), ordered_(ordered) {}
  bool ordered() const override { return ordered_; }
  Device memory() const override { return memory_; }
  std::unique_ptr<TransferGroup> start(std::vector<Transfer> transfers) override {
    for (const Transfer& t : transfers)
      LOOM_CHECK(t.tensor.device() == memory_, "boundary transfer of a ", t.tensor.device().str(),
                 " tensor on a transport of ", memory_.str(), " memory");
    return std::make_unique<MpiTransferGroup>(std::move(transfers), comm_);
  }

 private:
  MPI_Comm comm_;
  Device memory_;
  bool ordered_;
};

}  // namespace

std::unique_ptr<BoundaryTransport> make_mpi_transport(MPI_Comm comm, Device memory, bool ordered) {
  LOOM_CHECK(!memory.is_cuda(), "MPI moves host (or sim) memory; CUDA tensors cross a boundary by NCCL or host-staged");
  return std::make_unique<MpiTransport>(comm, memory, ordered);
}

std::unique_ptr<BoundaryTransport> make_nccl_transport(MPI_Comm members, Device device) {
#ifdef LOOM_WITH_CUDA
  return detail::make_nccl_transport(members, device);
#else
  (void)members;
  (void)device;
  LOOM_THROW("NCCL stage boundaries need a build with CUDA (configure with -DLOOM_CUDA=ON)");
#endif
}

}  // namespace loom::comm
