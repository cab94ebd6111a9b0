// The communication watchdog: a dead or stuck peer must end the job, not hang it.
//
// Every blocking wait in loom::comm (collectives, ring steps, stage-boundary receives, bucket
// waits) runs inside a WatchdogScope. A background thread checks the open scopes; when one has
// been open longer than the timeout it prints
//   loom: error (rank R): communication watchdog: <what> (peer rank P on HOST) made no progress for T s; aborting
// and calls MPI_Abort, which ends every rank of the job. This is the one place loom::comm aborts
// instead of throwing: a thread blocked inside MPI or NCCL cannot be unwound by an exception.
// Each rank runs its own watchdog, so whichever rank waits longest reports first.
//
// Timeout: LOOM_COMM_TIMEOUT_S (seconds, default 600; 0 disables), or set_comm_timeout_seconds().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::comm {

double comm_timeout_seconds();
void set_comm_timeout_seconds(double seconds);
// The host of every world rank, so a message names the host of a silent peer (a lost host shows
// as its ranks going silent). Topology::detect() sets it when it finds the physical hosts.
void set_watchdog_peer_hosts(std::vector<std::string> host_of_rank);

class WatchdogScope {
 public:
  // `what` must outlive the scope (a string literal); `peer` is a world rank or -1.
  explicit WatchdogScope(const char* what, int peer = -1);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  std::uint64_t id_ = 0;
};

}  // namespace loom::comm
