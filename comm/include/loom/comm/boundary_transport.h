// How the rows of stage-boundary tensors travel once their header (dtype, shape) has arrived.
//
// A StageLink (stage_link.h) exchanges small headers over MPI and hands the data to a transport,
// one group of transfers per send or receive, on one of two paths:
//   host_staged    MPI on host memory, each message tagged by (micro-batch, direction, link,
//                  tensor), so receives may be posted in any order. A device tensor is copied to
//                  host memory by the sender and back to the device by the receiver.
//   device_direct  device memory to device memory, matched by order as NCCL's send/receive are
//                  (no tags): the transfers between two ranks in one direction are received in the
//                  order they were sent, so the link posts receives in that order (and checks it with
//                  a sequence number in every header). CUDA: ncclSend/ncclRecv grouped, on a
//                  communicator per link and direction with its own stream, ordered after loom's
//                  compute stream by an event. sim: MPI on the sim device's memory with one tag per
//                  link and direction, which matches exactly as NCCL does, so CPU tests prove the
//                  ordering logic the CUDA path relies on.
// NCCL puts at most one rank of a communicator on a GPU, so device_direct needs the ranks on both
// sides of a boundary on distinct devices; ProcessGroups falls back to host_staged otherwise.
#pragma once

#include <memory>
#include <vector>

#include <mpi.h>

#include <loom/core/device.h>
#include <loom/core/tensor.h>

namespace loom::comm {

// How a stage boundary's tensors travel: over MPI from host memory, device to device (NCCL or its
// stand-in), or not at all: `local` joins two chunks of the same ranks (a V-shaped schedule's turn,
// an interleaved schedule on one stage), whose tensors the executor hands over in memory, so the
// boundary gets no link.
enum class BoundaryPath : unsigned char { host_staged, device_direct, local };
const char* boundary_path_name(BoundaryPath path);

// One message: `tensor` (contiguous, in the transport's memory) sent to or received from world
// rank `peer`. `tag` is used by tagged transports only.
struct Transfer {
  Tensor tensor;
  int peer = 0;
  bool send = false;
  int tag = 0;
};

// Transfers started together. Movable only through its owner; wait() or test() until done.
class TransferGroup {
 public:
  virtual ~TransferGroup();
  // Makes progress without blocking; true once every transfer has completed.
  virtual bool test() = 0;
  // Blocks under the watchdog (`what`, expecting `peer`) until every transfer has completed.
  virtual void wait(const char* what, int peer) = 0;
};

class BoundaryTransport {
 public:
  virtual ~BoundaryTransport();
  // True when messages are matched by order rather than by tag (device_direct).
  virtual bool ordered() const = 0;
  // Where the tensors of its transfers live.
  virtual Device memory() const = 0;
  // Starts `transfers` as one group (sends and receives of one group never wait on each other).
  virtual std::unique_ptr<TransferGroup> start(std::vector<Transfer> transfers) = 0;
};

// MPI point-to-point over `comm` (not owned). Tagged (host_staged, host memory) or ordered (the
// sim device's device_direct: every message of a link and direction carries the same tag).
std::unique_ptr<BoundaryTransport> make_mpi_transport(MPI_Comm comm, Device memory, bool ordered);
// NCCL send/receive among the members of `members` (collective over them; only used to set up the
// NCCL communicator), on CUDA device `device`. Needs a build with CUDA.
std::unique_ptr<BoundaryTransport> make_nccl_transport(MPI_Comm members, Device device);

}  // namespace loom::comm
