// Point-to-point transfers across one pipeline-stage boundary.
//
// Stage s (upstream, R_s replicas) sends activations forward to stage s+1 (downstream, R_{s+1}
// replicas), which sends activation gradients back. A micro-batch of `rows` rows is split evenly
// over each side's replicas (even_split: replica r of R owns rows [r*rows/R ...)), and every sender
// sends each receiver exactly the rows they both own, so R_s != R_{s+1} works and every row
// arrives once, in order. Every tensor of a boundary list has the micro-batch rows as dim 0.
//
// Each send or receive exchanges a small header over MPI, tagged by (micro-batch, direction, link):
// it carries each tensor's dtype and shape, so shapes may change between micro-batches (variable
// sequence lengths), and a sequence number per rank pair and direction. The rows then travel on
// the link's transport (boundary_transport.h), received straight into place: host-staged (MPI on
// host memory, tagged by micro-batch; a device tensor is copied to host by send, and wait() copies
// the rows to post_receive's `device`) or device-direct (NCCL on CUDA, its MPI stand-in on sim;
// matched by order, so the link starts each direction's data receives in the order they were
// posted and checks the sequence numbers). Receives are posted early (post_receive posts the
// headers; data receives follow as headers land, in progress(), test() or wait()); sends are
// non-blocking and completed by later calls, flush() or the destructor (which does not wait while
// an exception unwinds: peers may never receive). A receiver that owns no rows still gets a header
// (from sender 0) so it learns the shapes. Received tensors are charged to
// MemoryCategory::communication, as are the host copies of host-staged sends.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <mpi.h>

#include <loom/comm/boundary_transport.h>
#include <loom/comm/range_split.h>
#include <loom/core/tensor.h>

namespace loom::comm {

enum class Direction : std::uint8_t { forward, backward };  // activations s -> s+1, gradients s+1 -> s

struct ReceiveState;
struct ReceiveOrder;

// A receive posted by StageLink::post_receive. Movable; wait() at most once.
class PendingReceive {
 public:
  PendingReceive();
  explicit PendingReceive(std::unique_ptr<ReceiveState> state);
  PendingReceive(PendingReceive&&) noexcept;
  PendingReceive& operator=(PendingReceive&&) noexcept;
  ~PendingReceive();

  bool valid() const { return state_ != nullptr; }
  // Makes progress without blocking; true once every tensor has fully arrived.
  bool test();
  // Blocks (under the watchdog) and returns this rank's rows of every tensor.
  TensorList wait();

 private:
  std::unique_ptr<ReceiveState> state_;
};

class StageLink {
 public:
  // `comm` spans the world and is reserved for boundary traffic (not owned); `link` (0..63) tells
  // apart boundaries that share rank pairs (interleaved stages). Ranks are world ranks. The rows
  // travel on `forward` / `backward` (both or neither; neither: host-staged MPI over `comm`).
  StageLink(MPI_Comm comm, int link, std::vector<int> upstream, std::vector<int> downstream,
            std::unique_ptr<BoundaryTransport> forward = nullptr, std::unique_ptr<BoundaryTransport> backward = nullptr);
  ~StageLink();
  StageLink(const StageLink&) = delete;
  StageLink& operator=(const StageLink&) = delete;

  int link() const { return link_; }
  const std::vector<int>& upstream() const { return upstream_; }
  const std::vector<int>& downstream() const { return downstream_; }
  BoundaryPath path() const;

  // Sends this rank's rows of micro-batch `microbatch`: each tensor holds exactly the rows this
  // replica owns of a micro-batch of `rows` rows. This rank must be a sender for `direction`.
  void send(Direction direction, std::int64_t microbatch, const TensorList& tensors, std::int64_t rows);
  PendingReceive post_receive(Direction direction, std::int64_t microbatch, std::int64_t rows,
                              Device device = Device::cpu());
  // Without blocking: starts the data receives whose headers have landed, reaps finished sends.
  void progress();
  // Waits for every send made so far.
  void flush();

  // The rows replica `replica` of a side with `replicas` replicas owns.
  static Range rows_of(std::int64_t rows, int replicas, int replica) { return even_split(rows, replicas, replica); }

 private:
  struct PendingSend;
  void reap_sends(bool block);
  BoundaryTransport& transport(Direction direction) { return *transports_[static_cast<int>(direction)]; }

  MPI_Comm comm_;
  int link_;
  std::vector<int> upstream_;
  std::vector<int> downstream_;
  std::array<std::unique_ptr<BoundaryTransport>, 2> transports_;
  std::array<std::unique_ptr<ReceiveOrder>, 2> orders_;  // per direction: receives not yet started
  std::array<std::map<int, std::int64_t>, 2> sent_;      // per direction: headers sent to each rank
  std::vector<std::unique_ptr<PendingSend>> sends_;
};

}  // namespace loom::comm
