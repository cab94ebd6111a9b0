// The CUDA-device communicator over NCCL (built only with LOOM_WITH_CUDA).
//
// Rank 0 of the MPI communicator creates the ncclUniqueId and MPI_Bcast's it; every member then
// joins with ncclCommInitRank on its device. Collectives run on the communicator's own stream,
// which first waits for the work already queued on loom's compute stream of that device (so the
// gradients being reduced are complete), and return once the collective has finished. Reduce-
// scatter and allgather use ncclReduceScatter / ncclAllGather for even partitions and grouped
// ncclReduce / ncclBroadcast (one root per part) otherwise; scale uses a pre-multiplied sum.
#pragma once

#ifdef LOOM_WITH_CUDA

#include <cuda_runtime.h>
#include <nccl.h>

#include <loom/comm/communicator.h>

namespace loom::comm {

class NcclCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm`; collective over its members.
  NcclCommunicator(MPI_Comm comm, Device device);
  ~NcclCommunicator() override;

  Backend backend() const override { return Backend::nccl; }
  Device device() const override { return device_; }
  void allreduce(void* data, std::int64_t count, DType dtype, double scale = 1.0) override;
  void reduce_scatter(void* data, const RangeSplit& parts, DType dtype, double scale = 1.0,
                      Exchange exchange = Exchange::ring) override;
  void allgather(void* data, const RangeSplit& parts, DType dtype, Exchange exchange = Exchange::ring) override;
  void broadcast(void* data, std::int64_t count, DType dtype, int root) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  ncclComm_t nccl_comm() const { return nccl_; }
  cudaStream_t stream() const { return stream_; }

 private:
  // Makes the device current and orders this communicator's stream after loom's compute stream.
  void begin();
  // Waits for this communicator's stream under the watchdog, checking NCCL's asynchronous errors.
  void finish(const char* what);

  Device device_;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t compute_done_ = nullptr;
};

}  // namespace loom::comm

#endif  // LOOM_WITH_CUDA
