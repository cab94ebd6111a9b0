// How loom calls NCCL (see nccl_group.h); CUDA builds only.
#include <loom/comm/nccl_group.h>

#include <atomic>
#include <exception>

#include <loom/comm/watchdog.h>
#include <loom/base/error.h>

namespace loom::comm {

namespace {
std::atomic<std::int64_t> operations{0};
}  // namespace

NcclGroup::NcclGroup(Call start, Call end) : end_(end) {
  LOOM_NCCL_CHECK(start());
  open_ = true;
}

NcclGroup::~NcclGroup() {
  if (open_) end_();  // left by an exception: close the group, keep the first error
}

void NcclGroup::close(const char* what) {
  LOOM_CHECK(open_, "an NCCL group closed twice");
  open_ = false;
  WatchdogScope watch(what);
  LOOM_NCCL_CHECK(end_());
}

std::int64_t nccl_operations() { return operations.load(); }

void detail::count_nccl_operation() { operations.fetch_add(1); }

void release_nccl(ncclComm_t& comm) {
  if (comm == nullptr) return;
  if (std::uncaught_exceptions() > 0)
    ncclCommAbort(comm);
  else
    ncclCommDestroy(comm);
  comm = nullptr;
}

}  // namespace loom::comm
