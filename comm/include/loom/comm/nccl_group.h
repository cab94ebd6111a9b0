// How loom calls NCCL (built only with LOOM_WITH_CUDA): an open group as a scope, the count of
// operations enqueued, and the release of a communicator.
//
// A throw between ncclGroupStart and ncclGroupEnd would leave the group open on that thread, and
// every later NCCL call of the thread would be queued into it, never launched: a hang. So loom
// checks its arguments before a group, and opens groups through NcclGroup: close() ends the group
// under the watchdog (NCCL connects point-to-point peers inside ncclGroupEnd, which blocks until
// the peer posts its side) and checks the result; a scope left by an exception ends the group
// without checking, so the first error is the one the user sees.
//
// nccl_operations() counts every collective, send and receive loom has enqueued in this process,
// so a test proves that a group of one still calls NCCL (no size-1 shortcut).
#pragma once

#ifdef LOOM_WITH_CUDA

#include <cstdint>

#include <nccl.h>

#include <loom/comm/watchdog.h>
#include <loom/base/error.h>

namespace loom::comm {

class NcclGroup {
 public:
  using Call = ncclResult_t (*)();
  // ncclGroupStart (checked); `start` and `end` are NCCL's unless a test passes stand-ins.
  explicit NcclGroup(Call start = ncclGroupStart, Call end = ncclGroupEnd);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  // ncclGroupEnd under the watchdog (`what` names the wait), checked; once.
  void close(const char* what);

 private:
  Call end_;
  bool open_ = false;
};

// NCCL collectives, sends and receives this process has enqueued (successfully or not).
std::int64_t nccl_operations();

// Releases `comm` (and sets it to nullptr): ncclCommDestroy normally; ncclCommAbort while an
// exception unwinds, because ncclCommDestroy waits for work the failed peers will never do.
void release_nccl(ncclComm_t& comm);

namespace detail {
void count_nccl_operation();
}  // namespace detail

}  // namespace loom::comm

// LOOM_NCCL_CHECK of one NCCL operation, under the watchdog (outside a group, NCCL may connect
// peers before it returns), counted in nccl_operations().
#define LOOM_NCCL_OPERATION(expr)                          \
  do {                                                     \
    ::loom::comm::WatchdogScope loom_nccl_watch_(#expr);   \
    ::loom::comm::detail::count_nccl_operation();          \
    LOOM_NCCL_CHECK(expr);                                 \
  } while (0)

#endif  // LOOM_WITH_CUDA
