#include <loom/comm/stage_link.h>

#include <algorithm>
#include <array>
#include <deque>
#include <exception>
#include <mutex>
#include <string>

#include <loom/comm/link_shaper.h>
#include <loom/comm/watchdog.h>
#include <loom/base/error.h>
#include <loom/core/memory.h>

#include "mpi_types.h"

namespace loom::comm {

namespace {

constexpr int kMaxTensors = 16;
constexpr int kParts = kMaxTensors + 1;  // header + one message per tensor
constexpr int kMaxLinks = 64;
constexpr std::int64_t kMagic = 0x6c6f6f6d;  // "loom"
constexpr int kTensorWords = 2 + Shape::kMaxRank;  // dtype, rank, dims
constexpr int kHeaderWords = 8 + kMaxTensors * kTensorWords;
using Header = std::array<std::int64_t, kHeaderWords>;
enum HeaderField { kMagicField, kMicrobatch, kDirection, kLink, kSequence, kRowBegin, kRowCount, kTensorCount, kTensors };

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

// The tag of a data message: by micro-batch and tensor on tagged transports; one per link and
// direction on ordered ones, which match by order as NCCL does.
int data_tag(MPI_Comm comm, const BoundaryTransport& transport, std::int64_t microbatch, Direction direction, int link,
             int tensor) {
  return transport.ordered() ? message_tag(comm, 0, direction, link, 1) : message_tag(comm, microbatch, direction, link, 1 + tensor);
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
  std::vector<MPI_Request> requests;    // the headers
  std::unique_ptr<TransferGroup> data;  // the rows (null when none are sent)
};

// One direction of a link: the receives posted whose data transfers have not started, in post
// order, and (ordered transports) the sequence number expected next from each sender.
struct ReceiveOrder {
  std::deque<ReceiveState*> unposted;
  std::map<int, std::int64_t> expected;
};

struct ReceiveState {
  MPI_Comm comm = MPI_COMM_NULL;
  int link = 0;
  Direction direction = Direction::forward;
  std::int64_t microbatch = 0;
  Device device;                           // where wait() returns the tensors
  BoundaryTransport* transport = nullptr;  // where the rows arrive
  ReceiveOrder* order = nullptr;           // null once the link is gone
  Range mine;
  std::vector<int> senders;        // world ranks
  std::vector<Range> sender_rows;  // the rows each sender sends us (global row indices)
  std::vector<Header> headers;
  std::vector<MPI_Request> header_requests;
  std::unique_ptr<TransferGroup> data;
  bool data_posted = false;
  bool complete = false;
  TensorList tensors;

  std::string where(int sender) const {
    return "stage link " + std::to_string(link) + ", " + direction_name(direction) + " micro-batch " +
           std::to_string(microbatch) + ", from rank " + std::to_string(senders[sender]);
  }

  void check_headers() {
    const Header& first = headers[0];
    for (int s = 0; s < static_cast<int>(senders.size()); ++s) {
      const Header& h = headers[s];
      LOOM_CHECK(h[kMagicField] == kMagic && h[kMicrobatch] == microbatch && h[kDirection] == static_cast<int>(direction) &&
                     h[kLink] == link,
                 where(s), ": unexpected header (a mismatched send)");
      LOOM_CHECK(h[kRowBegin] == sender_rows[s].begin && h[kRowCount] == sender_rows[s].size(), where(s), ": got rows [",
                 h[kRowBegin], ", ", h[kRowBegin] + h[kRowCount], ") but expected [", sender_rows[s].begin, ", ",
                 sender_rows[s].end, ") (do both sides agree on the micro-batch rows?)");
      LOOM_CHECK(h[kTensorCount] == first[kTensorCount], where(s), ": ", h[kTensorCount],
                 " tensors, but another sender sent ", first[kTensorCount]);
      for (int t = 0; t < first[kTensorCount]; ++t) {
        const std::int64_t* a = &h[kTensors + t * kTensorWords];
        const std::int64_t* b = &first[kTensors + t * kTensorWords];
        bool same = a[0] == b[0] && a[1] == b[1];
        for (int d = 1; same && d < a[1]; ++d) same = a[2 + d] == b[2 + d];
        LOOM_CHECK(same, where(s), ": tensor ", t, " has a different dtype or shape than from rank ", senders[0]);
      }
      if (!transport->ordered()) continue;
      std::int64_t& expected = order->expected[senders[s]];
      LOOM_CHECK(h[kSequence] == expected, where(s), ": transfer ", h[kSequence], " of this direction arrived where ",
                 expected, " was expected (a device-direct boundary matches by order: receives must be posted in the "
                 "order the peer sends)");
      ++expected;
    }
  }

  // Checks the headers, allocates the tensors and starts one receive per (sender, tensor) straight
  // into the rows that sender owns.
  void post_data() {
    check_headers();
    const Header& first = headers[0];
    const std::int64_t count = first[kTensorCount];
    MemoryCategoryScope category(MemoryCategory::communication);
    const PinnedHostScope staging(device);  // host-staged for a GPU: wait() copies to it without waiting
    tensors.clear();
    for (int t = 0; t < count; ++t) {
      const std::int64_t* words = &first[kTensors + t * kTensorWords];
      std::vector<std::int64_t> dims(words + 2, words + 2 + words[1]);
      dims[0] = mine.size();
      tensors.push_back(Tensor::empty(Shape(dims), static_cast<DType>(words[0]), transport->memory()));
    }
    std::vector<Transfer> transfers;
    for (int s = 0; s < static_cast<int>(senders.size()); ++s) {
      if (sender_rows[s].empty()) continue;
      for (int t = 0; t < count; ++t) {
        Tensor rows = tensors[t].slice(sender_rows[s].begin - mine.begin, sender_rows[s].end - mine.begin);
        if (rows.numel() == 0) continue;
        transfers.push_back({rows, senders[s], false, data_tag(comm, *transport, microbatch, direction, link, t)});
      }
    }
    if (!transfers.empty()) data = transport->start(std::move(transfers));
    data_posted = true;
    auto& queue = order->unposted;
    queue.erase(std::find(queue.begin(), queue.end(), this));
  }

  bool headers_in(bool block) {
    if (block) {
      WatchdogScope watch("stage-boundary receive (header)", senders.front());
      LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(header_requests.size()), header_requests.data(), MPI_STATUSES_IGNORE));
      return true;
    }
    int done = 1;
    LOOM_MPI_CHECK(MPI_Testall(static_cast<int>(header_requests.size()), header_requests.data(), &done, MPI_STATUSES_IGNORE));
    return done != 0;
  }

  // Starts this receive's data transfers; on an ordered transport, those of every receive of this
  // direction posted before it first. False when a header needed has not landed (only if !block).
  bool start_data(bool block) {
    if (data_posted) return true;
    LOOM_CHECK(order != nullptr, "stage link ", link, ": a receive outlived its link");
    if (!transport->ordered()) {
      if (!headers_in(block)) return false;
      post_data();
      return true;
    }
    while (!data_posted) {
      ReceiveState* next = order->unposted.front();
      if (!next->headers_in(block)) return false;
      next->post_data();
    }
    return true;
  }

  bool progress(bool block) {
    if (complete) return true;
    if (!start_data(block)) return false;
    if (data && block)
      data->wait("stage-boundary receive (data)", senders.front());
    else if (data && !data->test())
      return false;
    complete = true;
    return true;
  }

  ~ReceiveState() {
    // A receive dropped before completion is cancelled so MPI does not write into freed memory
    // (the data group cancels its own).
    for (MPI_Request& request : header_requests)
      if (request != MPI_REQUEST_NULL) {
        MPI_Cancel(&request);
        MPI_Request_free(&request);
      }
    if (!data_posted && order != nullptr) {
      auto& queue = order->unposted;
      queue.erase(std::find(queue.begin(), queue.end(), this));
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
  const bool staged = state_->transport->memory() != device;
  state_.reset();
  if (staged) {
    MemoryCategoryScope category(MemoryCategory::communication);
    for (Tensor& tensor : tensors) tensor = tensor.to(device);
  }
  return tensors;
}

StageLink::StageLink(MPI_Comm comm, int link, std::vector<int> upstream, std::vector<int> downstream,
                     std::unique_ptr<BoundaryTransport> forward, std::unique_ptr<BoundaryTransport> backward)
    : comm_(comm),
      link_(link),
      upstream_(std::move(upstream)),
      downstream_(std::move(downstream)),
      transports_{std::move(forward), std::move(backward)} {
  LOOM_CHECK(link >= 0 && link < kMaxLinks, "stage link id ", link, " outside 0..", kMaxLinks - 1);
  LOOM_CHECK(!upstream_.empty() && !downstream_.empty(), "stage link ", link, " needs ranks on both sides");
  LOOM_CHECK((transports_[0] == nullptr) == (transports_[1] == nullptr), "stage link ", link,
             ": a transport for one direction only");
  if (transports_[0] == nullptr)
    for (auto& transport : transports_) transport = make_mpi_transport(comm_, Device::cpu(), false);
  for (auto& order : orders_) order = std::make_unique<ReceiveOrder>();
}

BoundaryPath StageLink::path() const {
  return transports_[0]->memory().is_cpu() ? BoundaryPath::host_staged : BoundaryPath::device_direct;
}

StageLink::~StageLink() {
  for (auto& order : orders_)
    for (ReceiveState* state : order->unposted) state->order = nullptr;
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

  BoundaryTransport& carrier = transport(direction);
  MemoryCategoryScope category(MemoryCategory::communication);  // host copies of device tensors
  TensorList sent;
  for (const Tensor& tensor : tensors) {
    const PinnedHostScope staging(tensor.device());  // a GPU's rows come back by direct DMA
    LOOM_CHECK(tensor.defined() && tensor.rank() >= 1 && tensor.size(0) == mine.size(), "stage link ", link_, ": ",
               direction_name(direction), " micro-batch ", microbatch, " tensor ", tensor.shape().str(),
               " should hold this replica's ", mine.size(), " of ", rows, " rows in dim 0");
    sent.push_back(tensor.device() == carrier.memory() ? tensor : tensor.to(carrier.memory()));
  }
  auto pending = std::make_unique<PendingSend>();
  pending->headers.reserve(receivers.size());
  std::vector<Transfer> transfers;
  for (int r = 0; r < static_cast<int>(receivers.size()); ++r) {
    const Range theirs = rows_of(rows, static_cast<int>(receivers.size()), r);
    if (!sends_to(mine, theirs, me)) continue;
    const Range overlap = theirs.empty() ? theirs : intersect(mine, theirs);
    const int peer = receivers[r];
    Header& header = pending->headers.emplace_back();
    header.fill(0);
    header[kMagicField] = kMagic;
    header[kMicrobatch] = microbatch;
    header[kDirection] = static_cast<int>(direction);
    header[kLink] = link_;
    header[kSequence] = sent_[static_cast<int>(direction)][peer]++;
    header[kRowBegin] = overlap.begin;
    header[kRowCount] = overlap.size();
    header[kTensorCount] = static_cast<std::int64_t>(sent.size());
    for (std::size_t t = 0; t < sent.size(); ++t) {
      std::int64_t* words = &header[kTensors + t * kTensorWords];
      words[0] = static_cast<std::int64_t>(sent[t].dtype());
      words[1] = sent[t].rank();
      for (int d = 0; d < sent[t].rank(); ++d) words[2 + d] = sent[t].size(d);
      words[2] = overlap.size();
    }
    shape_send(peer, sizeof(Header));
    pending->requests.emplace_back();
    LOOM_MPI_CHECK(MPI_Isend(header.data(), kHeaderWords, MPI_INT64_T, peer,
                             message_tag(comm_, microbatch, direction, link_, 0), comm_, &pending->requests.back()));
    if (overlap.empty()) continue;
    for (std::size_t t = 0; t < sent.size(); ++t) {
      const Tensor rows_sent = sent[t].slice(overlap.begin - mine.begin, overlap.end - mine.begin);
      if (rows_sent.numel() == 0) continue;
      shape_send(peer, static_cast<std::int64_t>(rows_sent.nbytes()));
      transfers.push_back(
          {rows_sent, peer, true, data_tag(comm_, carrier, microbatch, direction, link_, static_cast<int>(t))});
    }
  }
  if (!transfers.empty()) pending->data = carrier.start(std::move(transfers));
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
  state->transport = &transport(direction);
  state->order = orders_[static_cast<int>(direction)].get();
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
  state->order->unposted.push_back(state.get());
  return PendingReceive(std::move(state));
}

void StageLink::progress() {
  for (auto& order : orders_)
    while (!order->unposted.empty() && order->unposted.front()->start_data(false)) {
    }
  reap_sends(false);
}

void StageLink::flush() { reap_sends(true); }

void StageLink::reap_sends(bool block) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < sends_.size(); ++i) {
    PendingSend* pending = sends_[i].get();
    int done = 0;
    if (block) {
      {
        WatchdogScope watch("stage-boundary send");
        LOOM_MPI_CHECK(MPI_Waitall(static_cast<int>(pending->requests.size()), pending->requests.data(), MPI_STATUSES_IGNORE));
      }
      if (pending->data) pending->data->wait("stage-boundary send (data)", -1);
      done = 1;
    } else {
      LOOM_MPI_CHECK(
          MPI_Testall(static_cast<int>(pending->requests.size()), pending->requests.data(), &done, MPI_STATUSES_IGNORE));
      if (done && pending->data) done = pending->data->test() ? 1 : 0;
    }
    if (!done) {
      if (kept != i) sends_[kept] = std::move(sends_[i]);
      ++kept;
    }
  }
  sends_.resize(kept);
}

}  // namespace loom::comm
