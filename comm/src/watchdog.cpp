// One watchdog thread per process, started by the first scope. Scopes are registered in a small
// table under a mutex; the thread wakes a few times per timeout period and aborts the job when a
// scope has outlived its deadline. The table and the thread are never destroyed, so scopes opened
// during static destruction stay safe.
#include <loom/comm/watchdog.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <mpi.h>

#include <loom/core/error.h>

namespace loom::comm {

namespace {

using Clock = std::chrono::steady_clock;

double timeout_from_environment() {
  const char* text = std::getenv("LOOM_COMM_TIMEOUT_S");
  if (!text || !*text) return 600.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  LOOM_CHECK(end != text && *end == '\0' && seconds >= 0, "LOOM_COMM_TIMEOUT_S: expected a number of seconds >= 0, got '",
             text, "'");
  return seconds;
}

struct Entry {
  Clock::time_point opened;
  Clock::time_point deadline;
  const char* what;
  int peer;
};

class Watchdog {
 public:
  static Watchdog& instance() {
    static Watchdog* watchdog = new Watchdog();  // never destroyed: see the top of this file
    return *watchdog;
  }

  double timeout() const { return timeout_.load(); }
  void set_timeout(double seconds) {
    LOOM_CHECK(seconds >= 0, "communication timeout must be >= 0 seconds, got ", seconds);
    timeout_ = seconds;
    wake_.notify_all();
  }

  std::uint64_t open(const char* what, int peer) {
    const double seconds = timeout_.load();
    if (seconds <= 0) return 0;
    const Clock::time_point now = Clock::now();
    const auto deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::lock_guard lock(mutex_);
    if (!thread_started_) {
      std::thread([this] { run(); }).detach();
      thread_started_ = true;
    }
    const std::uint64_t id = ++next_id_;
    entries_.emplace(id, Entry{now, deadline, what, peer});
    return id;
  }

  void set_peer_hosts(std::vector<std::string> host_of_rank) {
    std::lock_guard lock(mutex_);
    host_of_rank_ = std::move(host_of_rank);
  }

  void close(std::uint64_t id) {
    if (id == 0) return;
    std::lock_guard lock(mutex_);
    entries_.erase(id);
  }

 private:
  Watchdog() : timeout_(timeout_from_environment()) {}

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      const double seconds = timeout_.load();
      const auto period = std::chrono::duration<double>(seconds > 0 ? std::min(1.0, seconds / 4) : 1.0);
      wake_.wait_for(lock, period);
      const Clock::time_point now = Clock::now();
      for (const auto& [id, entry] : entries_)
        if (now > entry.deadline) fire(entry, now);
    }
  }

  // Runs on the watchdog thread with mutex_ held.
  [[noreturn]] void fire(const Entry& entry, Clock::time_point now) const {
    const double waited = std::chrono::duration<double>(now - entry.opened).count();
    std::string peer;
    if (entry.peer >= 0) {
      peer = " (peer rank " + std::to_string(entry.peer);
      if (entry.peer < static_cast<int>(host_of_rank_.size())) peer += " on " + host_of_rank_[entry.peer];
      peer += ")";
    }
    std::fprintf(stderr,
                 "loom: error (rank %d): communication watchdog: %s%s made no progress for %.1f s "
                 "(LOOM_COMM_TIMEOUT_S=%g); aborting the job\n",
                 error_rank(), entry.what, peer.c_str(), waited, timeout());
    std::fflush(stderr);
    // MPI_Abort can block for good when the job's runtime is out of reach (the local daemon
    // cannot tell a lost host or mpirun): this process then ends itself a little later.
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(5));
      std::_Exit(3);
    }).detach();
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::abort();
  }

  std::atomic<double> timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::uint64_t, Entry> entries_;
  std::vector<std::string> host_of_rank_;
  std::uint64_t next_id_ = 0;
  bool thread_started_ = false;
};

}  // namespace

double comm_timeout_seconds() { return Watchdog::instance().timeout(); }
void set_comm_timeout_seconds(double seconds) { Watchdog::instance().set_timeout(seconds); }
void set_watchdog_peer_hosts(std::vector<std::string> host_of_rank) {
  Watchdog::instance().set_peer_hosts(std::move(host_of_rank));
}

WatchdogScope::WatchdogScope(const char* what, int peer) : id_(Watchdog::instance().open(what, peer)) {}
WatchdogScope::~WatchdogScope() { Watchdog::instance().close(id_); }

}  // namespace loom::comm
