// The host-memory communicator.
//
// allreduce is MPI_Allreduce. reduce_scatter and allgather are loom's own, over MPI point-to-
// point: a ring (n - 1 steps, each sending one part to the right neighbour and receiving one from
// the left) or, for Exchange::halving on a power-of-two group, recursive halving / doubling
// (log2(n) steps, each exchanging half of the remaining range with one partner). Reduce-scatter
// transfers are cut into segments received into a small window of scratch slots, so each segment
// is added while it is still in cache and while later segments are in flight. Scratch is charged
// to MemoryCategory::communication and kept for reuse.
#pragma once

#include <cstdint>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/core/tensor.h>

namespace loom::comm {

struct RingOptions {
  std::int64_t segment_bytes = 1 << 20;  // LOOM_RING_SEGMENT_KB overrides the default
  int window = 4;                        // segments in flight per reduce-scatter step
};
RingOptions default_ring_options();

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm`.
  explicit MpiCommunicator(MPI_Comm comm, RingOptions ring = default_ring_options());

  Backend backend() const override { return Backend::mpi; }
  Device device() const override { return Device::cpu(); }
  void allreduce(void* data, std::int64_t count, DType dtype, double scale = 1.0) override;
  void reduce_scatter(void* data, const RangeSplit& parts, DType dtype, double scale = 1.0,
                      Exchange exchange = Exchange::ring) override;
  void allgather(void* data, const RangeSplit& parts, DType dtype, Exchange exchange = Exchange::ring) override;
  void broadcast(void* data, std::int64_t count, DType dtype, int root) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  const RingOptions& ring_options() const { return ring_; }
  void set_ring_options(const RingOptions& ring);

 private:
  // One exchange: send `send_count` elements to member `to` while receiving `recv_count` from
  // member `from`, added into `accumulate` (reduce) or written to `receive` (gather).
  void reduce_step(const char* send, std::int64_t send_count, int to, char* accumulate, std::int64_t recv_count,
                   int from, DType dtype, int tag);
  void gather_step(const char* send, std::int64_t send_count, int to, char* receive, std::int64_t recv_count, int from,
                   DType dtype, int tag);
  void halving_reduce_scatter(char* data, const RangeSplit& parts, DType dtype);
  void doubling_allgather(char* data, const RangeSplit& parts, DType dtype);
  char* scratch(std::size_t bytes);

  RingOptions ring_;
  Tensor scratch_;
  std::vector<MPI_Request> requests_;
};

}  // namespace loom::comm
