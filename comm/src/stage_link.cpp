#include <loom/comm/stage_link.h>

#include <array>
#include <exception>
#include <mutex>
#include <string>

#include <loom/comm/link_shaper.h>
#include <loom/comm/watchdog.h>
#include <loom/core/error.h>
#include <loom/core/memory.h>

#include "mpi_types.h"

namespace loom::comm {

namespace {

constexpr int kMaxTensors = 16;
constexpr int kParts = kMaxTensors + 1;  // header + one message per tensor
constexpr int kMaxLinks = 64;
constexpr std::int64_t kMagic = 0x6c6f6f6d;  // "loom"
constexpr int kTensorWords = 2 + Shape::kMaxRank;  // dtype, rank, dims
constexpr int kHeaderWords = 7 + kMaxTensors * kTensorWords;
using Header = std::array<std::int64_t, kHeaderWords>;
enum HeaderField { kMagicField, kMicrobatch, kDirection, kLink, kRowBegin, kRowCount, kTensorCount, kTensors };

const char* direction_name(Direction direction) { return direction == Direction::forward ? "forward" : "backward"; }

// Micro-batch ids wrap around the tag space; tags of micro-batches in flight never collide, and MPI
// keeps messages with one tag in order.
int message_tag(MPI_Comm comm, std::int64_t microbatch, Direction direction, int link, int part) {
  int* upper = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &upper, &found);
  const std::int64_t tag_ub = found ? *upper : 32767;
  const std::int64_t span = tag_ub / (2 * kMaxLinks * kParts);
  return static_cast<int>((((microbatch % span) * 2 + static_cast<int>(direction)) * kMaxLinks + link) * kParts + part);
}

int index_of(const std::vector<int>& ranks, int rank) {
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i)
    if (ranks[i] == rank) return i;
  return -1;
}

int comm_rank(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

// The senders a receiver hears from: those owning some of its rows, or sender 0 when it owns none.
bool sends_to(const Range& sender_rows, const Range& receiver_rows, int sender) {
  return receiver_rows.empty() ? sender == 0 : !intersect(sender_rows, receiver_rows).empty();
}

}  // namespace

struct StageLink::PendingSend {
  std::vector<Header> headers;
  std::vector<MPI_Request> requests;
  TensorList keep_alive;
};

struct ReceiveState {
  MPI_Comm comm = MPI_COMM_NULL;
  int link = 0;
  Direction direction = Direction::forward;
  std::int64_t microbatch = 0;
  Device device;
  Range mine;
  std::vector<int> senders;        // world ranks
  std::vector<Range> sender_rows;  // the rows each sender sends us (global row indices)
  std::vector<Header> headers;
  std::vector<MPI_Request> header_requests;
  std::vector<MPI_Request> data_requests;
  bool data_posted = false;
  bool complete = false;
  TensorList tensors;

  std::string where(int sender) const {
    return "stage link " + std::to_string(link) + ", " + direction_name(direction) + " micro-batch " +
           std::to_string(microbatch) + ", from rank " + std::to_string(senders[sender]);
  }

  // Checks the headers against each other and the expected rows, allocates the tensors and posts
  // one receive per (sender, tensor) straight into the rows that sender owns.
  void post_data() {
    const Header& first = headers[0];
    const std::int64_t count = first[kTensorCount];
    for (int s = 0; s < static_cast<int>(senders.size()); ++s) {
      const Header& h = headers[s];
      LOOM_CHECK(h[kMagicField] == kMagic && h[kMicrobatch] == microbatch && h[kDirection] == static_cast<int>(direction) &&
                     h[kLink] == link,
                 where(s), ": unexpected header (a mismatched send)");
      LOOM_CHECK(h[kRowBegin] == sender_rows[s].begin && h[kRowCount] == sender_rows[s].size(), where(s), ": got rows [",
                 h[kRowBegin], ", ", h[kRowBegin] + h[kRowCount], ") but expected [", sender_rows[s].begin, ", ",
                 sender_rows[s].end, ") (do both sides agree on the micro-batch rows?)");
      LOOM_CHECK(h[kTensorCount] == count, where(s), ": ", h[kTensorCount], " tensors, but another sender sent ", count);
      for (int t = 0; t < count; ++t) {
        const std::int64_t* a = &h[kTensors + t * kTensorWords];
        const std::int64_t* b = &first[kTensors + t * kTensorWords];
        bool same = a[0] == b[0] && a[1] == b[1];
        for (int d = 1; same && d < a[1]; ++d) same = a[2 + d] == b[2 + d];
        LOOM_CHECK(same, where(s), ": tensor ", t, " has a different dtype or shape than from rank ", senders[0]);
      }
    }
    MemoryCategoryScope category(MemoryCategory::communication);
    tensors.clear();
    for (int t = 0; t < count; ++t) {
      const std::int64_t* words = &first[kTensors + t * kTensorWords];
      std::vector<std::int64_t> dims(words + 2, words + 2 + words[1]);
      dims[0] = mine.size();
      tensors.push_back(Tensor::empty(Shape(dims), static_cast<DType>(words[0])));
    }
    for (int s = 0; s < static_cast<int>(senders.size()); ++s) {
      if (sender_rows[s].empty()) continue;
      for (int t = 0; t < count; ++t) {
        Tensor rows = tensors[t].slice(sender_rows[s].begin - mine.begin, sender_rows[s].end - mine.begin);
        if (rows.numel() == 0) continue;
        data_requests.emplace_back();
        LOOM_MPI_CHECK(MPI_Irecv(rows.raw_data(), detail::mpi_count(rows.numel()), detail::mpi_datatype(rows.dtype()),
                                 senders[s], message_tag(comm, microbatch, direction, link, 1 + t), comm,
                                 &data_requests.back()));
      }
    }
    data_posted = true;
  }

  bool progress(bool block) {
    if (complete) return true;
    if (!data_posted) {
      int done = 1;
      if (block) {
        WatchdogScope watch("stage-boundary receive (header)", senders.front());
        LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(header_requests.size()), header_requests.data(), MPI_STATUSES_IGNORE));
      } else {
        LOOM_MPI_CHECK(MPI_Testall(static_cast<int>(header_requests.size()), header_requests.data(), &done,
                                   MPI_STATUSES_IGNORE));
      }
      if (!done) return false;
      post_data();
    }
    int done = 1;
    if (block) {
      WatchdogScope watch("stage-boundary receive (data)", senders.front());
      LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(data_requests.size()), data_requests.data(), MPI_STATUSES_IGNORE));
    } else {
      LOOM_MPI_CHECK(MPI_Testall(static_cast<int>(data_requests.size()), data_requests.data(), &done, MPI_STATUSES_IGNORE));
    }
    complete = done != 0;
    return complete;
  }

  ~ReceiveState() {
    // A receive dropped before completion is cancelled so MPI does not write into freed memory.
    for (std::vector<MPI_Request>* list : {&header_requests, &data_requests})
      for (MPI_Request& request : *list)
        if (request != MPI_REQUEST_NULL) {
          MPI_Cancel(&request);
          MPI_Request_free(&request);
        }
  }
};

PendingReceive::PendingReceive() = default;
PendingReceive::PendingReceive(std::unique_ptr<ReceiveState> state) : state_(std::move(state)) {}
PendingReceive::PendingReceive(PendingReceive&&) noexcept = default;
PendingReceive& PendingReceive::operator=(PendingReceive&&) noexcept = default;
PendingReceive::~PendingReceive() = default;

bool PendingReceive::test() {
  LOOM_CHECK(state_ != nullptr, "test() on an empty PendingReceive");
  return state_->progress(false);
}

TensorList PendingReceive::wait() {
  LOOM_CHECK(state_ != nullptr, "wait() on an empty PendingReceive");
  state_->progress(true);
  TensorList tensors = std::move(state_->tensors);
  const Device device = state_->device;
  state_.reset();
  if (!device.is_cpu()) {
    MemoryCategoryScope category(MemoryCategory::communication);
    for (Tensor& tensor : tensors) tensor = tensor.to(device);
  }
  return tensors;
}

StageLink::StageLink(MPI_Comm comm, int link, std::vector<int> upstream, std::vector<int> downstream)
    : comm_(comm), link_(link), upstream_(std::move(upstream)), downstream_(std::move(downstream)) {
  LOOM_CHECK(link >= 0 && link < kMaxLinks, "stage link id ", link, " outside 0..", kMaxLinks - 1);
  LOOM_CHECK(!upstream_.empty() && !downstream_.empty(), "stage link ", link, " needs ranks on both sides");
}

StageLink::~StageLink() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (std::uncaught_exceptions() > 0) {
    // This rank is failing: the peers may never receive, so do not wait. The pending sends and
    // their buffers are left to MPI rather than freed under it: kept for good in a list that is
    // never destroyed (reachable, so LeakSanitizer does not count them as leaked).
    static std::mutex abandoned_mutex;
    static auto* abandoned = new std::vector<std::unique_ptr<PendingSend>>();
    std::lock_guard lock(abandoned_mutex);
    for (auto& pending : sends_) {
      for (MPI_Request& request : pending->requests)
        if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
      abandoned->push_back(std::move(pending));
    }
    return;
  }
  try {
    flush();
  } catch (...) {
  }
}

void StageLink::send(Direction direction, std::int64_t microbatch, const TensorList& tensors, std::int64_t rows) {
  const std::vector<int>& senders = direction == Direction::forward ? upstream_ : downstream_;
  const std::vector<int>& receivers = direction == Direction::forward ? downstream_ : upstream_;
  const int me = index_of(senders, comm_rank(comm_));
  LOOM_CHECK(me >= 0, "stage link ", link_, ": rank ", comm_rank(comm_), " does not send ", direction_name(direction));
  LOOM_CHECK(microbatch >= 0 && rows >= 0, "stage link ", link_, ": micro-batch ", microbatch, " of ", rows, " rows");
  LOOM_CHECK(!tensors.empty() && tensors.size() <= kMaxTensors, "stage link ", link_, ": ", tensors.size(),
             " tensors (1 to ", kMaxTensors, " cross a boundary)");
  const Range mine = rows_of(rows, static_cast<int>(senders.size()), me);

  auto pending = std::make_unique<PendingSend>();
  MemoryCategoryScope category(MemoryCategory::communication);  // host copies of device tensors
  for (const Tensor& tensor : tensors) {
    LOOM_CHECK(tensor.defined() && tensor.rank() >= 1 && tensor.size(0) == mine.size(), "stage link ", link_, ": ",
               direction_name(direction), " micro-batch ", microbatch, " tensor ", tensor.shape().str(),
               " should hold this replica's ", mine.size(), " of ", rows, " rows in dim 0");
    pending->keep_alive.push_back(tensor.device().is_cpu() ? tensor : tensor.to(Device::cpu()));
  }
  pending->headers.reserve(receivers.size());
  for (int r = 0; r < static_cast<int>(receivers.size()); ++r) {
    const Range theirs = rows_of(rows, static_cast<int>(receivers.size()), r);
    if (!sends_to(mine, theirs, me)) continue;
    const Range overlap = theirs.empty() ? theirs : intersect(mine, theirs);
    Header& header = pending->headers.emplace_back();
    header.fill(0);
    header[kMagicField] = kMagic;
    header[kMicrobatch] = microbatch;
    header[kDirection] = static_cast<int>(direction);
    header[kLink] = link_;
    header[kRowBegin] = overlap.begin;
    header[kRowCount] = overlap.size();
    header[kTensorCount] = static_cast<std::int64_t>(tensors.size());
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      std::int64_t* words = &header[kTensors + t * kTensorWords];
      const Tensor& tensor = pending->keep_alive[t];
      words[0] = static_cast<std::int64_t>(tensor.dtype());
      words[1] = tensor.rank();
      for (int d = 0; d < tensor.rank(); ++d) words[2 + d] = tensor.size(d);
      words[2] = overlap.size();
    }
    const int peer = receivers[r];
    shape_send(peer, sizeof(Header));
    pending->requests.emplace_back();
    LOOM_MPI_CHECK(MPI_Isend(header.data(), kHeaderWords, MPI_INT64_T, peer,
                             message_tag(comm_, microbatch, direction, link_, 0), comm_, &pending->requests.back()));
    if (overlap.empty()) continue;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      const Tensor rows_sent =
          pending->keep_alive[t].slice(overlap.begin - mine.begin, overlap.end - mine.begin);
      if (rows_sent.numel() == 0) continue;
      shape_send(peer, static_cast<std::int64_t>(rows_sent.nbytes()));
      pending->requests.emplace_back();
      LOOM_MPI_CHECK(MPI_Isend(rows_sent.raw_data(), detail::mpi_count(rows_sent.numel()),
                               detail::mpi_datatype(rows_sent.dtype()), peer,
                               message_tag(comm_, microbatch, direction, link_, 1 + static_cast<int>(t)), comm_,
                               &pending->requests.back()));
    }
  }
  sends_.push_back(std::move(pending));
  reap_sends(false);
}

PendingReceive StageLink::post_receive(Direction direction, std::int64_t microbatch, std::int64_t rows, Device device) {
  const std::vector<int>& senders = direction == Direction::forward ? upstream_ : downstream_;
  const std::vector<int>& receivers = direction == Direction::forward ? downstream_ : upstream_;
  const int me = index_of(receivers, comm_rank(comm_));
  LOOM_CHECK(me >= 0, "stage link ", link_, ": rank ", comm_rank(comm_), " does not receive ", direction_name(direction));
  LOOM_CHECK(microbatch >= 0 && rows >= 0, "stage link ", link_, ": micro-batch ", microbatch, " of ", rows, " rows");
  auto state = std::make_unique<ReceiveState>();
  state->comm = comm_;
  state->link = link_;
  state->direction = direction;
  state->microbatch = microbatch;
  state->device = device;
  state->mine = rows_of(rows, static_cast<int>(receivers.size()), me);
  for (int s = 0; s < static_cast<int>(senders.size()); ++s) {
    const Range theirs = rows_of(rows, static_cast<int>(senders.size()), s);
    if (!sends_to(theirs, state->mine, s)) continue;
    state->senders.push_back(senders[s]);
    state->sender_rows.push_back(state->mine.empty() ? state->mine : intersect(theirs, state->mine));
  }
  state->headers.resize(state->senders.size());
  state->header_requests.resize(state->senders.size());
  for (std::size_t s = 0; s < state->senders.size(); ++s)
    LOOM_MPI_CHECK(MPI_Irecv(state->headers[s].data(), kHeaderWords, MPI_INT64_T, state->senders[s],
                             message_tag(comm_, microbatch, direction, link_, 0), comm_, &state->header_requests[s]));
  return PendingReceive(std::move(state));
}

void StageLink::flush() { reap_sends(true); }

void StageLink::reap_sends(bool block) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < sends_.size(); ++i) {
    PendingSend* pending = sends_[i].get();
    int done = 0;
    if (block) {
      WatchdogScope watch("stage-boundary send");
      LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(pending->requests.size()), pending->requests.data(), MPI_STATUSES_IGNORE));
      done = 1;
    } else {
      LOOM_MPI_CHECK(
          MPI_Testall(static_cast<int>(pending->requests.size()), pending->requests.data(), &done, MPI_STATUSES_IGNORE));
    }
    if (!done) {
      if (kept != i) sends_[kept] = std::move(sends_[i]);
      ++kept;
    }
  }
  sends_.resize(kept);
}

}  // namespace loom::comm
