#include <loom/comm/nccl_communicator.h>

#include <loom/comm/nccl_group.h>
#include <loom/comm/watchdog.h>
#include <loom/core/cuda/context.h>
#include <loom/base/error.h>

#include "nccl_transport.h"

namespace loom::comm {

namespace {

ncclDataType_t nccl_datatype(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::bf16: return ncclBfloat16;
    case DType::f16: return ncclFloat16;
  }
  return ncclFloat32;
}

// A sum, or a sum of inputs pre-multiplied by `scale` (NCCL >= 2.11). Destroyed with the scope.
class ScaledSum {
 public:
  ScaledSum(double scale, DType dtype, ncclComm_t comm) : comm_(comm) {
    if (scale == 1.0) return;
    LOOM_CHECK(dtype == DType::f32 || dtype == DType::f64, "cannot scale a ", dtype_name(dtype), " buffer");
    float scale32 = static_cast<float>(scale);
    void* scalar = dtype == DType::f32 ? static_cast<void*>(&scale32) : static_cast<void*>(&scale);
    LOOM_NCCL_CHECK(ncclRedOpCreatePreMulSum(&op_, scalar, nccl_datatype(dtype), ncclScalarHostImmediate, comm_));
    custom_ = true;
  }
  ~ScaledSum() {
    if (custom_) ncclRedOpDestroy(op_, comm_);
  }
  ncclRedOp_t op() const { return op_; }

 private:
  ncclComm_t comm_;
  ncclRedOp_t op_ = ncclSum;
  bool custom_ = false;
};

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, Device device) : Communicator(comm), device_(device) {
  LOOM_CHECK(device.is_cuda(), "an NCCL communicator needs a CUDA device, not ", device.str());
  nccl_ = detail::join_nccl(mpi_comm(), device);
  LOOM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_.index);
  release_nccl(nccl_);
  if (compute_done_) cudaEventDestroy(compute_done_);
  if (stream_) cudaStreamDestroy(stream_);
}

void NcclCommunicator::begin() {
  cudaStream_t compute = cuda::stream(device_.index);  // also makes the device current
  LOOM_CUDA_CHECK(cudaEventRecord(compute_done_, compute));
  LOOM_CUDA_CHECK(cudaStreamWaitEvent(stream_, compute_done_, 0));
}

void NcclCommunicator::finish(const char* what) {
  detail::wait_for_nccl(nccl_, [this] { return cudaStreamQuery(stream_); }, what, -1);
}

void NcclCommunicator::allreduce(void* data, std::int64_t count, DType dtype, double scale) {
  if (count == 0) return;
  begin();
  ScaledSum sum(scale, dtype, nccl_);
  LOOM_NCCL_OPERATION(ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_datatype(dtype), sum.op(), nccl_, stream_));
  finish("ncclAllReduce");
}

void NcclCommunicator::reduce_scatter(void* data, const RangeSplit& parts, DType dtype, double scale, Exchange) {
  LOOM_CHECK(parts.parts() == size(), "reduce_scatter: partition of ", parts.parts(), " parts for ", size(), " members");
  if (parts.total() == 0) return;
  begin();
  ScaledSum sum(scale, dtype, nccl_);
  char* base = static_cast<char*>(data);
  const std::size_t element = dtype_size(dtype);
  if (parts.uniform()) {
    const std::size_t count = static_cast<std::size_t>(parts.part(0).size());
    LOOM_NCCL_OPERATION(ncclReduceScatter(base, base + rank() * count * element, count, nccl_datatype(dtype), sum.op(), nccl_,
                                      stream_));
  } else {
    NcclGroup group;
    for (int p = 0; p < size(); ++p) {
      char* part = base + parts.part(p).begin * element;
      LOOM_NCCL_OPERATION(ncclReduce(part, part, static_cast<std::size_t>(parts.part(p).size()), nccl_datatype(dtype), sum.op(),
                                 p, nccl_, stream_));
    }
    group.close("ncclGroupEnd (NCCL reduce-scatter)");
  }
  finish("NCCL reduce-scatter");
}

void NcclCommunicator::allgather(void* data, const RangeSplit& parts, DType dtype, Exchange) {
  LOOM_CHECK(parts.parts() == size(), "allgather: partition of ", parts.parts(), " parts for ", size(), " members");
  if (parts.total() == 0) return;
  begin();
  char* base = static_cast<char*>(data);
  const std::size_t element = dtype_size(dtype);
  if (parts.uniform()) {
    const std::size_t count = static_cast<std::size_t>(parts.part(0).size());
    LOOM_NCCL_OPERATION(ncclAllGather(base + rank() * count * element, base, count, nccl_datatype(dtype), nccl_, stream_));
  } else {
    NcclGroup group;
    for (int p = 0; p < size(); ++p) {
      char* part = base + parts.part(p).begin * element;
      LOOM_NCCL_OPERATION(
          ncclBroadcast(part, part, static_cast<std::size_t>(parts.part(p).size()), nccl_datatype(dtype), p, nccl_, stream_));
    }
    group.close("ncclGroupEnd (NCCL allgather)");
  }
  finish("NCCL allgather");
}

void NcclCommunicator::broadcast(void* data, std::int64_t count, DType dtype, int root) {
  if (count == 0) return;
  begin();
  LOOM_NCCL_OPERATION(ncclBroadcast(data, data, static_cast<std::size_t>(count), nccl_datatype(dtype), root, nccl_, stream_));
  finish("ncclBroadcast");
}

void NcclCommunicator::barrier() {
  cuda::synchronize(device_.index);
  WatchdogScope watch("MPI_Barrier");
  LOOM_MPI_CHECK(MPI_Barrier(mpi_comm()));
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  WatchdogScope watch("MPI_Comm_split");
  LOOM_MPI_CHECK(MPI_Comm_split(mpi_comm(), color >= 0 ? color : MPI_UNDEFINED, key, &part));
  if (part == MPI_COMM_NULL) return nullptr;
  return std::make_unique<NcclCommunicator>(part, device_);
}

}  // namespace loom::comm
