// The reduce-scatter and allgather of MpiCommunicator: ring, or recursive halving / doubling.
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
bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

void MpiCommunicator::reduce_scatter(void* data, const RangeSplit& parts, DType dtype, double scale, Exchange exchange) {
  const std::size_t element = detail::reducible_size(dtype);
  LOOM_CHECK(parts.parts() == size(), "reduce_scatter: partition of ", parts.parts(), " parts for ", size(), " members");
  const int n = size(), r = rank();
  char* base = static_cast<char*>(data);
  auto at = [&](int p) { return base + parts.part(p).begin * element; };
  if (n > 1 && parts.total() > 0) {
    if (exchange == Exchange::halving && power_of_two(n)) {
      halving_reduce_scatter(base, parts, dtype);
    } else {
      WatchdogScope watch("ring reduce-scatter", world_rank_of(wrap(r - 1, n)));
      const int right = wrap(r + 1, n), left = wrap(r - 1, n);
      for (int step = 0; step < n - 1; ++step) {
        const int send = wrap(r - step - 1, n), receive = wrap(r - step - 2, n);
        reduce_step(at(send), parts.part(send).size(), right, at(receive), parts.part(receive).size(), left, dtype, step);
      }
    }
  }
  detail::scale(at(r), parts.part(r).size(), dtype, scale);
}

void MpiCommunicator::allgather(void* data, const RangeSplit& parts, DType dtype, Exchange exchange) {
  const std::size_t element = dtype_size(dtype);
  LOOM_CHECK(parts.parts() == size(), "allgather: partition of ", parts.parts(), " parts for ", size(), " members");
  const int n = size(), r = rank();
  if (n == 1 || parts.total() == 0) return;
  char* base = static_cast<char*>(data);
  if (exchange == Exchange::halving && power_of_two(n)) return doubling_allgather(base, parts, dtype);
  auto at = [&](int p) { return base + parts.part(p).begin * element; };
  WatchdogScope watch("ring allgather", world_rank_of(wrap(r - 1, n)));
  const int right = wrap(r + 1, n), left = wrap(r - 1, n);
  for (int step = 0; step < n - 1; ++step) {
    const int send = wrap(r - step, n), receive = wrap(r - step - 1, n);
    gather_step(at(send), parts.part(send).size(), right, at(receive), parts.part(receive).size(), left, dtype, step);
  }
}

// Recursive halving: at distance d = n/2, n/4, ..., 1 this member and its partner (rank ^ d) split
// the block of 2d parts they both still hold; each keeps the half with its own part, sends the
// other half and adds the partner's copy of its half. After log2(n) steps part r is complete.
void MpiCommunicator::halving_reduce_scatter(char* data, const RangeSplit& parts, DType dtype) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(dtype));
  const int r = rank();
  auto span = [&](int first, int last) { return Range{parts.part(first).begin, parts.part(last - 1).end}; };
  WatchdogScope watch("halving reduce-scatter");
  for (int distance = size() / 2, step = 0; distance >= 1; distance /= 2, ++step) {
    const int partner = r ^ distance;
    const int block = r & ~(2 * distance - 1);
    const bool upper = (r & distance) != 0;
    const Range keep = upper ? span(block + distance, block + 2 * distance) : span(block, block + distance);
    const Range give = upper ? span(block, block + distance) : span(block + distance, block + 2 * distance);
    reduce_step(data + give.begin * element, give.size(), partner, data + keep.begin * element, keep.size(), partner, dtype,
                step);
  }
}

// Recursive doubling: at distance d = 1, 2, ..., n/2 this member sends the block of d parts it
// holds to its partner (rank ^ d) and receives the partner's block next to it.
void MpiCommunicator::doubling_allgather(char* data, const RangeSplit& parts, DType dtype) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(dtype));
  const int r = rank();
  auto span = [&](int first, int last) { return Range{parts.part(first).begin, parts.part(last - 1).end}; };
  WatchdogScope watch("doubling allgather");
  for (int distance = 1, step = 0; distance < size(); distance *= 2, ++step) {
    const int partner = r ^ distance;
    const int mine = r & ~(distance - 1), theirs = partner & ~(distance - 1);
    const Range send = span(mine, mine + distance), receive = span(theirs, theirs + distance);
    gather_step(data + send.begin * element, send.size(), partner, data + receive.begin * element, receive.size(), partner,
                dtype, step);
  }
}

// Sends `send_count` elements to `to` while receiving `recv_count` from `from` in segments,
// adding each received segment into `accumulate` as soon as it lands.
void MpiCommunicator::reduce_step(const char* send, std::int64_t send_count, int to, char* accumulate,
                                  std::int64_t recv_count, int from, DType dtype, int tag) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t segment = std::max<std::int64_t>(1, ring_.segment_bytes / element);
  const std::int64_t sends = (send_count + segment - 1) / segment;
  const std::int64_t receives = (recv_count + segment - 1) / segment;
  const std::int64_t slots = std::min<std::int64_t>(ring_.window, receives);
  const MPI_Datatype type = detail::mpi_datatype(dtype);
  char* slot_memory = slots > 0 ? scratch(static_cast<std::size_t>(slots * segment * element)) : nullptr;

  requests_.assign(static_cast<std::size_t>(slots + sends), MPI_REQUEST_NULL);
  MPI_Request* receive_requests = requests_.data();
  MPI_Request* send_requests = requests_.data() + slots;
  auto segment_count = [&](std::int64_t total, std::int64_t index) { return std::min(segment, total - index * segment); };
  auto post_receive = [&](std::int64_t index) {
    const std::int64_t slot = index % slots;
    LOOM_MPI_CHECK(MPI_Irecv(slot_memory + slot * segment * element, detail::mpi_count(segment_count(recv_count, index)),
                             type, from, tag, mpi_comm(), &receive_requests[slot]));
  };
  for (std::int64_t index = 0; index < slots; ++index) post_receive(index);

  std::int64_t sent = 0, reduced = 0;
  while (sent < sends || reduced < receives) {
    if (sent < sends) {
      const std::int64_t count = segment_count(send_count, sent);
      shape_send(world_rank_of(to), count * element);
      LOOM_MPI_CHECK(MPI_Isend(send + sent * segment * element, detail::mpi_count(count), type, to, tag, mpi_comm(),
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

// Sends `send_count` elements to `to` and receives `recv_count` from `from` directly into place.
void MpiCommunicator::gather_step(const char* send, std::int64_t send_count, int to, char* receive,
                                  std::int64_t recv_count, int from, DType dtype, int tag) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t segment = std::max<std::int64_t>(1, ring_.segment_bytes / element);
  const std::int64_t sends = (send_count + segment - 1) / segment;
  const std::int64_t receives = (recv_count + segment - 1) / segment;
  const MPI_Datatype type = detail::mpi_datatype(dtype);
  requests_.assign(static_cast<std::size_t>(sends + receives), MPI_REQUEST_NULL);
  for (std::int64_t index = 0; index < receives; ++index)
    LOOM_MPI_CHECK(MPI_Irecv(receive + index * segment * element,
                             detail::mpi_count(std::min(segment, recv_count - index * segment)), type, from, tag,
                             mpi_comm(), &requests_[index]));
  for (std::int64_t index = 0; index < sends; ++index) {
    const std::int64_t count = std::min(segment, send_count - index * segment);
    shape_send(world_rank_of(to), count * element);
    LOOM_MPI_CHECK(MPI_Isend(send + index * segment * element, detail::mpi_count(count), type, to, tag, mpi_comm(),
                             &requests_[receives + index]));
  }
  LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(sends + receives), requests_.data(), MPI_STATUSES_IGNORE));
}

}  // namespace loom::comm
