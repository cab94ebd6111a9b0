// Communicator: a group of ranks that run collectives together on one kind of memory.
//
// Two real variants: MpiCommunicator moves host memory (MPI's own allreduce plus loom's ring
// reduce-scatter/allgather over MPI point-to-point), NcclCommunicator moves CUDA device memory
// (NCCL, bootstrapped by an MPI_Bcast of the ncclUniqueId; compiled only with LOOM_WITH_CUDA).
// Every communicator also carries an MPI communicator with the same members, used for set-up,
// splitting and control messages.
//
// All operations are collective over the members, in place, on buffers of `count` elements of a
// reducible dtype (f32, f64, i32, i64), and blocking (they return when this rank's part is done);
// every wait runs under the watchdog (watchdog.h). `scale` multiplies reduced values (an average
// is a sum scaled by 1/n). Not thread-safe: one thread at a time per communicator.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <mpi.h>

#include <loom/comm/range_split.h>
#include <loom/core/device.h>
#include <loom/core/dtype.h>

namespace loom::comm {

enum class Backend : std::uint8_t { mpi, nccl };
std::string_view backend_name(Backend backend);
Backend parse_backend(std::string_view name);  // "mpi" or "nccl"

// How reduce_scatter and allgather exchange data. `ring`: n-1 steps between ring neighbours.
// `halving`: recursive halving (reduce-scatter) and doubling (allgather), log2(n) steps with the
// same bytes, used when n is a power of two (else ring). A hint: NCCL picks its own.
enum class Exchange : std::uint8_t { ring, halving };

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int world_rank_of(int member) const { return world_ranks_.at(member); }
  const std::vector<int>& world_ranks() const { return world_ranks_; }
  MPI_Comm mpi_comm() const { return comm_; }

  virtual Backend backend() const = 0;
  virtual Device device() const = 0;

  // The backend's own allreduce (MPI_Allreduce, ncclAllReduce): data = scale * sum over members.
  virtual void allreduce(void* data, std::int64_t count, DType dtype, double scale = 1.0) = 0;
  // Afterwards member p's part `parts.part(p)` holds scale * the sum of that part over members;
  // the other parts hold unspecified partial sums.
  virtual void reduce_scatter(void* data, const RangeSplit& parts, DType dtype, double scale = 1.0,
                              Exchange exchange = Exchange::ring) = 0;
  // Afterwards every member holds every part, each copied from the member that owns it.
  virtual void allgather(void* data, const RangeSplit& parts, DType dtype, Exchange exchange = Exchange::ring) = 0;
  virtual void broadcast(void* data, std::int64_t count, DType dtype, int root) = 0;
  virtual void barrier() = 0;
  // Collective: members passing the same color >= 0 form a new communicator of this backend,
  // ordered by key; members passing a negative color get nullptr.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

 protected:
  // Takes ownership of `comm` (freed on destruction unless MPI is already finalised).
  explicit Communicator(MPI_Comm comm);

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
};

// A communicator of `backend` over a duplicate of `comm` (collective over its members).
// The NCCL backend needs a CUDA device and a build with LOOM_WITH_CUDA.
std::unique_ptr<Communicator> make_communicator(Backend backend, MPI_Comm comm, Device device = Device::cpu());

}  // namespace loom::comm
