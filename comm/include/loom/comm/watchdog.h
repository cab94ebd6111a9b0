// The communication watchdog: a dead or stuck peer must end the job, not hang it.
//
// Every blocking wait in loom::comm (MPI start-up and shutdown, communicator creation, topology
// detection, collectives, ring steps, stage-boundary receives, bucket waits, the control
// collectives of checkpoints) runs inside a WatchdogScope. A background thread checks the open scopes; when one has
// been open longer than the timeout it prints
//   loom: error (rank R): communication watchdog: <what> (peer rank P on HOST) made no progress for T s; aborting
//   ...; rank S stopped progressing (not waiting in loom's communication: no answer to the watchdog within G s)
// and calls MPI_Abort, which ends every rank of the job. This is the one place loom::comm aborts
// instead of throwing: a thread blocked inside MPI or NCCL cannot be unwound by an exception.
// Each rank runs its own watchdog, so whichever rank waits longest reports first; before it
// aborts it asks the other ranks' watchdogs which of them are waiting too, and names the ones that
// are not (watchdog.cpp says how).
//
// Timeout: LOOM_COMM_TIMEOUT_S (seconds, default kDefaultCommTimeoutSeconds; 0 disables; at most
// kMaxCommTimeoutSeconds, anything else is a loom::Error), or set_comm_timeout_seconds().
// 300 s: far above any healthy wait loom has (a step, an allreduce of a few GB on a slow network,
// a first-step NCCL setup, a stage writing its checkpoint file), yet a hang ends in five minutes
// rather than ten, on a cluster where an idle job is expensive.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::comm {

constexpr double kDefaultCommTimeoutSeconds = 300;
constexpr double kMaxCommTimeoutSeconds = 1e6;  // 11.6 days; beyond, the deadline arithmetic would not be needed

// LOOM_COMM_TIMEOUT_S's value (null or empty: the default); throws loom::Error for anything but a
// number of seconds in [0, kMaxCommTimeoutSeconds] (nan, inf, 1e10, -1, "4abc").
double comm_timeout_from_environment(const char* text);
// now + seconds on the steady clock, for seconds in [0, kMaxCommTimeoutSeconds] (throws otherwise),
// so the nanosecond count cannot overflow into a deadline in the past.
std::chrono::steady_clock::time_point comm_deadline(std::chrono::steady_clock::time_point now, double seconds);

double comm_timeout_seconds();
void set_comm_timeout_seconds(double seconds);
// The host of every world rank, so a message names the host of a silent peer (a lost host shows
// as its ranks going silent). Topology::detect() sets it when it finds the physical hosts.
void set_watchdog_peer_hosts(std::vector<std::string> host_of_rank);

// Where a wait is. `job`: inside MPI's lifetime; a firing asks the other ranks' watchdogs which
// rank stopped and ends the job with MPI_Abort. `process`: while MPI cannot be used (inside
// MPI_Init_thread, MPI_Finalize): a firing prints the message and ends this process (exit 3), and
// the launcher (mpirun) then ends the others; the stopped rank cannot be named, because ranks can
// talk to each other only once MPI_Init_thread has returned everywhere.
enum class WatchdogReach { job, process };

class WatchdogScope {
 public:
  // `what` must outlive the scope (a string literal); `peer` is a world rank or -1.
  explicit WatchdogScope(const char* what, int peer = -1, WatchdogReach reach = WatchdogReach::job);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  std::uint64_t id_ = 0;
};

}  // namespace loom::comm
