// The ring reduce-scatter and allgather of MpiCommunicator.
//
// Member r owns part r. Reduce-scatter step k (k = 0 .. n-2): send part (r-k-1) to the right
// neighbour, receive part (r-k-2) from the left and add it into place; after n-1 steps part r has
// passed every member once and holds the full sum, accumulated in the same order on every run.
// Allgather step k: send part (r-k) right, receive part (r-k-1) from the left straight into place.
#include <algorithm>

#include <loom/comm/link_shaper.h>
#include <loom/comm/mpi_communicator.h>
#include <loom/comm/watchdog.h>

#include "host_reduce.h"
#include "mpi_types.h"

namespace loom::comm {

namespace {

int wrap(int value, int n) { return ((value % n) + n) % n; }

}  // namespace

void MpiCommunicator::reduce_scatter(void* data, const Partition& parts, DType dtype, double scale) {
  const std::size_t element = detail::reducible_size(dtype);
  LOOM_CHECK(parts.parts() == size(), "reduce_scatter: partition of ", parts.parts(), " parts for ", size(), " members");
  const int n = size(), r = rank();
  char* base = static_cast<char*>(data);
  auto at = [&](int p) { return base + parts.part(p).begin * element; };
  if (n > 1 && parts.total() > 0) {
    WatchdogScope watch("ring reduce-scatter", world_rank_of(wrap(r - 1, n)));
    for (int step = 0; step < n - 1; ++step) {
      const int send = wrap(r - step - 1, n), receive = wrap(r - step - 2, n);
      reduce_step(at(send), parts.part(send).size(), at(receive), parts.part(receive).size(), dtype, step);
    }
  }
  detail::scale(at(r), parts.part(r).size(), dtype, scale);
}

void MpiCommunicator::allgather(void* data, const Partition& parts, DType dtype) {
  const std::size_t element = dtype_size(dtype);
  LOOM_CHECK(parts.parts() == size(), "allgather: partition of ", parts.parts(), " parts for ", size(), " members");
  const int n = size(), r = rank();
  if (n == 1 || parts.total() == 0) return;
  char* base = static_cast<char*>(data);
  auto at = [&](int p) { return base + parts.part(p).begin * element; };
  WatchdogScope watch("ring allgather", world_rank_of(wrap(r - 1, n)));
  for (int step = 0; step < n - 1; ++step) {
    const int send = wrap(r - step, n), receive = wrap(r - step - 1, n);
    gather_step(at(send), parts.part(send).size(), at(receive), parts.part(receive).size(), dtype, step);
  }
}

// Sends `send_count` elements right while receiving `recv_count` from the left in segments,
// adding each received segment into `accumulate` as soon as it lands.
void MpiCommunicator::reduce_step(const char* send, std::int64_t send_count, char* accumulate, std::int64_t recv_count,
                                  DType dtype, int tag) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t segment = std::max<std::int64_t>(1, ring_.segment_bytes / element);
  const std::int64_t sends = (send_count + segment - 1) / segment;
  const std::int64_t receives = (recv_count + segment - 1) / segment;
  const std::int64_t slots = std::min<std::int64_t>(ring_.window, receives);
  const int right = (rank() + 1) % size(), left = (rank() + size() - 1) % size();
  const MPI_Datatype type = detail::mpi_datatype(dtype);
  char* slot_memory = slots > 0 ? scratch(static_cast<std::size_t>(slots * segment * element)) : nullptr;

  requests_.assign(static_cast<std::size_t>(slots + sends), MPI_REQUEST_NULL);
  MPI_Request* receive_requests = requests_.data();
  MPI_Request* send_requests = requests_.data() + slots;
  auto segment_count = [&](std::int64_t total, std::int64_t index) { return std::min(segment, total - index * segment); };
  auto post_receive = [&](std::int64_t index) {
    const std::int64_t slot = index % slots;
    LOOM_MPI_CHECK(MPI_Irecv(slot_memory + slot * segment * element, detail::mpi_count(segment_count(recv_count, index)),
                             type, left, tag, mpi_comm(), &receive_requests[slot]));
  };
  for (std::int64_t index = 0; index < slots; ++index) post_receive(index);

  std::int64_t sent = 0, reduced = 0;
  while (sent < sends || reduced < receives) {
    if (sent < sends) {
      const std::int64_t count = segment_count(send_count, sent);
      shape_send(world_rank_of(right), count * element);
      LOOM_MPI_CHECK(MPI_Isend(send + sent * segment * element, detail::mpi_count(count), type, right, tag, mpi_comm(),
                               &send_requests[sent]));
      ++sent;
    }
    if (reduced < receives) {
      const std::int64_t slot = reduced % slots;
      int done = 0;
      if (sent < sends) {
        LOOM_MPI_CHECK(MPI_Test(&receive_requests[slot], &done, MPI_STATUS_IGNORE));
      } else {
        LOOM_MPI_CHECK(MPI_Wait(&receive_requests[slot], MPI_STATUS_IGNORE));
        done = 1;
      }
      if (done) {
        detail::accumulate(accumulate + reduced * segment * element, slot_memory + slot * segment * element,
                           segment_count(recv_count, reduced), dtype);
        if (reduced + slots < receives) post_receive(reduced + slots);
        ++reduced;
      }
    }
  }
  LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(sends), send_requests, MPI_STATUSES_IGNORE));
}

// Sends `send_count` elements right and receives `recv_count` from the left directly into place.
void MpiCommunicator::gather_step(const char* send, std::int64_t send_count, char* receive, std::int64_t recv_count,
                                  DType dtype, int tag) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t segment = std::max<std::int64_t>(1, ring_.segment_bytes / element);
  const std::int64_t sends = (send_count + segment - 1) / segment;
  const std::int64_t receives = (recv_count + segment - 1) / segment;
  const int right = (rank() + 1) % size(), left = (rank() + size() - 1) % size();
  const MPI_Datatype type = detail::mpi_datatype(dtype);
  requests_.assign(static_cast<std::size_t>(sends + receives), MPI_REQUEST_NULL);
  for (std::int64_t index = 0; index < receives; ++index)
    LOOM_MPI_CHECK(MPI_Irecv(receive + index * segment * element,
                             detail::mpi_count(std::min(segment, recv_count - index * segment)), type, left, tag,
                             mpi_comm(), &requests_[index]));
  for (std::int64_t index = 0; index < sends; ++index) {
    const std::int64_t count = std::min(segment, send_count - index * segment);
    shape_send(world_rank_of(right), count * element);
    LOOM_MPI_CHECK(MPI_Isend(send + index * segment * element, detail::mpi_count(count), type, right, tag, mpi_comm(),
                             &requests_[receives + index]));
  }
  LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(sends + receives), requests_.data(), MPI_STATUSES_IGNORE));
}

}  // namespace loom::comm
