// Stage-boundary data over NCCL send/receive (see boundary_transport.h); CUDA builds only.
#include "nccl_transport.h"

#include <map>

#include <loom/comm/nccl_group.h>
#include <loom/comm/mpi_session.h>
#include <loom/core/cuda/context.h>

namespace loom::comm::detail {

ncclComm_t join_nccl(MPI_Comm comm, Device device) {
  LOOM_CHECK(device.is_cuda(), "an NCCL communicator needs a CUDA device, not ", device.str());
  int rank = 0, size = 1;
  LOOM_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  LOOM_MPI_CHECK(MPI_Comm_size(comm, &size));
  LOOM_CUDA_CHECK(cudaSetDevice(device.index));
  ncclUniqueId id;
  if (rank == 0) LOOM_NCCL_CHECK(ncclGetUniqueId(&id));
  {
    int root = 0;
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_translate_ranks(group, 1, &root, world, &root);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    WatchdogScope watch("MPI_Bcast (NCCL id)", root);
    LOOM_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm));
  }
  ncclComm_t nccl = nullptr;
  WatchdogScope watch("ncclCommInitRank");
  LOOM_NCCL_CHECK(ncclCommInitRank(&nccl, size, id, rank));
  return nccl;
}

namespace {

class NcclTransferGroup final : public TransferGroup {
 public:
  NcclTransferGroup(std::vector<Transfer> transfers, ncclComm_t& comm, cudaEvent_t done, int device)
      : transfers_(std::move(transfers)), comm_(comm), done_(done), device_(device) {}
  // The buffers go back to loom's cache, which hands them to work on the compute stream: that
  // stream first waits for the group (dropped before it completed, on an error path, NCCL may still
  // be reading or writing them). Nothing here throws: the first error is the one the user sees.
  ~NcclTransferGroup() override {
    cudaStream_t compute = cuda::existing_stream(device_);
    if (compute != nullptr && cudaSetDevice(device_) == cudaSuccess) (void)cudaStreamWaitEvent(compute, done_, 0);
    cudaEventDestroy(done_);
  }
  NcclTransferGroup(const NcclTransferGroup&) = delete;
  NcclTransferGroup& operator=(const NcclTransferGroup&) = delete;

  const std::vector<Transfer>& transfers() const { return transfers_; }
  bool test() override {
    const cudaError_t status = cudaEventQuery(done_);
    if (status == cudaErrorNotReady) return false;
    LOOM_CUDA_CHECK(status);
    return true;
  }
  void wait(const char* what, int peer) override {
    LOOM_CHECK(comm_ != nullptr, "NCCL stage boundary used after an NCCL error aborted it");
    wait_for_nccl(comm_, [this] { return cudaEventQuery(done_); }, what, peer);
  }

 private:
  std::vector<Transfer> transfers_;  // keeps the buffers alive until the transfers are done
  ncclComm_t& comm_;
  cudaEvent_t done_;
  int device_;
};

// One NCCL communicator over a boundary's ranks and its own stream. Every group first waits for
// the work queued so far on loom's compute stream (the rows to send are computed there, and a
// receive buffer may reuse memory the compute stream just released), then runs as one NCCL group.
class NcclTransport final : public BoundaryTransport {
 public:
  NcclTransport(MPI_Comm members, Device device) : device_(device) {
    int size = 1;
    LOOM_MPI_CHECK(MPI_Comm_size(members, &size));
    std::vector<int> world(static_cast<std::size_t>(size));
    const int mine = world_rank();
    {
      WatchdogScope watch("MPI_Allgather (NCCL boundary set-up)");
      LOOM_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, world.data(), 1, MPI_INT, members));
    }
    for (int m = 0; m < size; ++m) member_of_[world[static_cast<std::size_t>(m)]] = m;
    nccl_ = join_nccl(members, device);
    LOOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
    connect(world, mine);
  }
  ~NcclTransport() override {
    cudaSetDevice(device_.index);
    release_nccl(nccl_);
    if (compute_done_) cudaEventDestroy(compute_done_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  bool ordered() const override { return true; }
  Device memory() const override { return device_; }

  std::unique_ptr<TransferGroup> start(std::vector<Transfer> transfers) override {
    LOOM_CHECK(nccl_ != nullptr, "NCCL stage boundary used after an NCCL error aborted it");
    std::vector<int> peers;  // every check before the group: a throw inside it would leave it open
    for (const Transfer& t : transfers) {
      LOOM_CHECK(t.tensor.device() == device_, "NCCL boundary transfer of a ", t.tensor.device().str(), " tensor on ",
                 device_.str());
      const auto peer = member_of_.find(t.peer);
      LOOM_CHECK(peer != member_of_.end(), "rank ", t.peer, " is not on this NCCL stage boundary");
      peers.push_back(peer->second);
    }
    cudaStream_t compute = cuda::stream(device_.index);  // also makes the device current
    LOOM_CUDA_CHECK(cudaEventRecord(compute_done_, compute));
    LOOM_CUDA_CHECK(cudaStreamWaitEvent(stream_, compute_done_, 0));
    cudaEvent_t done = nullptr;
    LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    auto group = std::make_unique<NcclTransferGroup>(std::move(transfers), nccl_, done, device_.index);
    enqueue(group->transfers(), peers);
    LOOM_CUDA_CHECK(cudaEventRecord(done, stream_));
    return group;
  }

 private:
  // The transfers as one NCCL group on this transport's stream; `peers`: their members.
  void enqueue(const std::vector<Transfer>& transfers, const std::vector<int>& peers) {
    NcclGroup group;
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      const Transfer& t = transfers[i];
      const auto bytes = static_cast<std::size_t>(t.tensor.nbytes());
      if (t.send)
        LOOM_NCCL_OPERATION(ncclSend(t.tensor.raw_data(), bytes, ncclUint8, peers[i], nccl_, stream_));
      else
        LOOM_NCCL_OPERATION(ncclRecv(t.tensor.raw_data(), bytes, ncclUint8, peers[i], nccl_, stream_));
    }
    group.close("ncclGroupEnd (NCCL stage boundary)");
  }

  // Every member exchanges a value with every other in one group now, while all of them construct
  // this transport, so that NCCL makes its point-to-point connections here. NCCL connects lazily
  // inside the first ncclGroupEnd with a peer and blocks there until the peer joins; left to the
  // first boundary transfer, two ranks that both send first would each wait for the other.
  void connect(const std::vector<int>& world, int mine) {
    std::vector<Transfer> transfers;
    for (int rank : world) {
      if (rank == mine) continue;
      transfers.push_back({Tensor::zeros({1}, DType::f32, device_), rank, true});
      transfers.push_back({Tensor::zeros({1}, DType::f32, device_), rank, false});
    }
    if (!transfers.empty()) start(std::move(transfers))->wait("NCCL stage boundary connection", -1);
  }

  Device device_;
  std::map<int, int> member_of_;  // world rank -> rank in the NCCL communicator
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t compute_done_ = nullptr;
};

}  // namespace

std::unique_ptr<BoundaryTransport> make_nccl_transport(MPI_Comm members, Device device) {
  return std::make_unique<NcclTransport>(members, device);
}

}  // namespace loom::comm::detail
