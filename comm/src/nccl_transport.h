// The NCCL transport of stage-boundary data (built only with LOOM_WITH_CUDA; boundary_transport.h).
#pragma once

#ifdef LOOM_WITH_CUDA

#include <memory>
#include <thread>

#include <cuda_runtime.h>
#include <nccl.h>

#include <loom/comm/boundary_transport.h>
#include <loom/comm/watchdog.h>
#include <loom/base/error.h>

namespace loom::comm::detail {

std::unique_ptr<BoundaryTransport> make_nccl_transport(MPI_Comm members, Device device);

// Collective over `comm`: its rank 0 creates an ncclUniqueId and broadcasts it over MPI, then
// every member joins an NCCL communicator of the same ranks on CUDA device `device`.
ncclComm_t join_nccl(MPI_Comm comm, Device device);

// Polls `done` (cudaSuccess when the work is complete, cudaErrorNotReady while it runs) under the
// watchdog (`what`, expecting `peer`, -1 for none), checking NCCL's asynchronous errors on `comm`:
// an NCCL error aborts the communicator (set to nullptr) and throws naming `what`.
template <typename Done>
void wait_for_nccl(ncclComm_t& comm, const Done& done, const char* what, int peer) {
  WatchdogScope watch(what, peer);
  for (;;) {
    const cudaError_t status = done();
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) LOOM_CUDA_CHECK(status);
    ncclResult_t async = ncclSuccess;
    LOOM_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
    if (async != ncclSuccess) {
      ncclCommAbort(comm);
      comm = nullptr;
      LOOM_THROW("NCCL error ", ncclGetErrorString(async), " during ", what);
    }
    std::this_thread::yield();
  }
}

}  // namespace loom::comm::detail

#endif  // LOOM_WITH_CUDA
