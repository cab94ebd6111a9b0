// One watchdog thread per process, started by the first scope. Scopes are registered in a small
// table under a mutex; the thread wakes a few times per timeout period and aborts the job when a
// scope has outlived its deadline. The table and the thread are never destroyed, so scopes opened
// during static destruction stay safe.
//
// Naming the rank that stopped: the rank whose scope expired knows only whom it waits for, and in
// a collective, or behind a chain of waits (rank 0 waits for 1, which waits for the stopped 2),
// that is not the rank that stopped. So before it aborts, it asks every other rank's watchdog,
// over MPI_COMM_WORLD with a tag no other loom message uses: watchdogs answer while their rank
// waits inside a scope, so the ranks that do not answer within a grace period are the ones that
// stopped (SIGSTOP, a hang, or a loop outside loom's communication). A watchdog answers only
// while a scope is open and under the table's mutex, so it never calls MPI after its rank has
// left communication for good (MPI_Finalize).
#include <loom/comm/watchdog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include <loom/comm/mpi_session.h>
#include <loom/base/error.h>

namespace loom::comm {

namespace {

using Clock = std::chrono::steady_clock;

void check_timeout(double seconds, const char* what) {
  LOOM_CHECK(std::isfinite(seconds) && seconds >= 0 && seconds <= kMaxCommTimeoutSeconds, what,
             ": the communication timeout must be a number of seconds in [0, ", kMaxCommTimeoutSeconds,
             "] (0 disables the watchdog), got ", seconds);
}

struct Entry {
  Clock::time_point opened;
  Clock::time_point deadline;
  const char* what;
  int peer;
  WatchdogReach reach;
};

// What one watchdog tells another (MPI_BYTE): a query, or the answer "I wait in `what`".
struct Report {
  std::int32_t kind;  // kQuery or kAnswer
  std::int32_t peer;
  double waited_s;
  char what[48];
};
constexpr std::int32_t kQuery = 1, kAnswer = 2;

// The tag of watchdog reports: MPI_TAG_UB itself, which stage links never reach (their tags stay
// below it, see stage_link.cpp) and collectives do not use.
int report_tag() {
  int* upper = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found);
  return found ? *upper : 32767;
}

bool can_ask_peers() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized && mpi_thread_multiple() && world_size() > 1;
}

void send_report(const Report& report, int to) {
  // Nobody waits for the send (the peer may be stopped), so its buffer must outlive the call: Open
  // MPI may read it after MPI_Isend returns (a connection still being made; ASan found the old
  // temporary read after its scope). The sent reports stay here; the oldest go once thousands have
  // been sent, long after their small messages left.
  static std::mutex guard;
  static std::deque<Report> sent;
  const std::lock_guard<std::mutex> lock(guard);
  if (sent.size() >= 4096) sent.pop_front();
  sent.push_back(report);
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Isend(&sent.back(), sizeof(Report), MPI_BYTE, to, report_tag(), MPI_COMM_WORLD, &request) == MPI_SUCCESS)
    MPI_Request_free(&request);
}

// Receives one pending report, if there is one.
bool receive_report(Report& report, int& from) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, report_tag(), MPI_COMM_WORLD, &flag, &status);
  if (!flag) return false;
  MPI_Recv(&report, sizeof report, MPI_BYTE, status.MPI_SOURCE, report_tag(), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  from = status.MPI_SOURCE;
  return true;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) text += ", ... (" + std::to_string(ranks.size()) + " ranks)";
  return text;
}

class Watchdog {
 public:
  static Watchdog& instance() {
    static Watchdog* watchdog = new Watchdog();  // never destroyed: see the top of this file
    return *watchdog;
  }

  double timeout() const { return timeout_.load(); }
  void set_timeout(double seconds) {
    check_timeout(seconds, "set_comm_timeout_seconds");
    timeout_ = seconds;
    wake_.notify_all();
  }

  std::uint64_t open(const char* what, int peer, WatchdogReach reach) {
    const double seconds = timeout_.load();
    if (seconds <= 0) return 0;
    const Clock::time_point now = Clock::now();
    std::lock_guard lock(mutex_);
    if (!thread_started_) {
      std::thread([this] { run(); }).detach();
      thread_started_ = true;
    }
    const std::uint64_t id = ++next_id_;
    entries_.emplace(id, Entry{now, comm_deadline(now, seconds), what, peer, reach});
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
  Watchdog() : timeout_(comm_timeout_from_environment(std::getenv("LOOM_COMM_TIMEOUT_S"))) {}

  static double period_s(double seconds) { return seconds > 0 ? std::min(1.0, seconds / 4) : 1.0; }

  void run() {
    std::unique_lock lock(mutex_);
    Clock::time_point woke = Clock::now();
    for (;;) {
      const double period = period_s(timeout_.load());
      wake_.wait_for(lock, std::chrono::duration<double>(period));
      discount_own_stop(woke, period);
      woke = Clock::now();
      if (entries_.empty()) continue;
      // MPI is called only while a job-reach scope is open: never before MPI_Init_thread has
      // returned or during MPI_Finalize.
      const bool in_mpi = job_scope_open();
      if (in_mpi && asking_allowed()) answer_queries();
      const Clock::time_point now = Clock::now();
      for (const auto& [id, entry] : entries_)
        if (now > entry.deadline) {
          if (entry.reach == WatchdogReach::process || !in_mpi) end_process(entry, now);
          fire(entry, now);
        }
    }
  }

  // A wake-up far later than its period means this process itself was stopped (SIGSTOP, then the
  // SIGCONT that mpirun sends before it ends a job): that time is not the peers' fault, so the
  // deadlines move by it, and a rank that was stopped does not blame the others once continued.
  void discount_own_stop(Clock::time_point woke, double period) {
    const Clock::duration late =
        Clock::now() - woke - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period + 2.0));
    if (late <= Clock::duration::zero()) return;
    for (auto& [id, entry] : entries_) entry.deadline += late;
  }

  bool job_scope_open() const {
    for (const auto& [id, entry] : entries_)
      if (entry.reach == WatchdogReach::job) return true;
    return false;
  }

  bool asking_allowed() {
    if (!asking_checked_) {
      asking_ = can_ask_peers();
      asking_checked_ = true;
    }
    return asking_;
  }

  // The oldest open scope: what this rank waits for, for a peer that asks.
  Report answer() const {
    Report report{kAnswer, -1, 0, {}};
    const Entry* oldest = nullptr;
    for (const auto& [id, entry] : entries_)
      if (!oldest || entry.opened < oldest->opened) oldest = &entry;
    if (!oldest) return report;
    report.peer = oldest->peer;
    report.waited_s = std::chrono::duration<double>(Clock::now() - oldest->opened).count();
    std::strncpy(report.what, oldest->what, sizeof report.what - 1);
    return report;
  }

  // Answers the queries that arrived; returns the answers that arrived, by rank.
  void answer_queries(std::map<int, Report>* answers = nullptr) {
    Report report{};
    int from = -1;
    while (receive_report(report, from)) {
      if (report.kind == kQuery) send_report(answer(), from);
      if (report.kind == kAnswer && answers) (*answers)[from] = report;
    }
  }

  // "; rank 2 stopped progressing (...)": asks every other rank's watchdog and names the silent.
  std::string census() {
    if (!asking_allowed()) return "";
    const int size = world_size(), me = world_rank();
    for (int rank = 0; rank < size; ++rank)
      if (rank != me) send_report(Report{kQuery, -1, 0, {}}, rank);
    // Every waiting watchdog polls once per period: three periods are enough to hear from all.
    const double grace = std::max(2.0, 3 * period_s(timeout_.load()));
    std::map<int, Report> answers;
    const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(grace));
    while (Clock::now() < until && static_cast<int>(answers.size()) < size - 1) {
      answer_queries(&answers);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::vector<int> silent;
    for (int rank = 0; rank < size; ++rank)
      if (rank != me && !answers.count(rank)) silent.push_back(rank);
    char text[96];
    if (silent.empty()) {
      std::snprintf(text, sizeof text, "; every other rank answered that it waits in communication too (a deadlock?)");
      return text;
    }
    std::snprintf(text, sizeof text, " within %.1f s)", grace);
    return "; rank" + std::string(silent.size() > 1 ? "s " : " ") + rank_list(silent) +
           " stopped progressing (not waiting in loom's communication: no answer to the watchdog" + text;
  }

  // A process-reach scope expired (MPI_Init_thread, MPI_Finalize): no MPI to ask peers or to
  // abort the job with, so this process ends itself and the launcher ends the others. The rank
  // comes from the launcher's environment when MPI has not said it yet.
  [[noreturn]] void end_process(const Entry& entry, Clock::time_point now) {
    const double waited = std::chrono::duration<double>(now - entry.opened).count();
    std::string rank = error_rank() >= 0 ? std::to_string(error_rank()) : "?";
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
      if (const char* value = std::getenv(name); error_rank() < 0 && value && *value) {
        rank = std::string(value).substr(0, 16);
        break;
      }
    std::fprintf(stderr,
                 "loom: error (rank %s): communication watchdog: %s made no progress for %.1f s "
                 "(LOOM_COMM_TIMEOUT_S=%g); another rank did not get there (stopped, or never started), and outside "
                 "MPI's lifetime ranks cannot ask each other which: it is the rank that prints no such line; "
                 "ending this process\n",
                 rank.c_str(), entry.what, waited, timeout());
    std::fflush(stderr);
    std::_Exit(3);
  }

  [[noreturn]] void fire(const Entry& entry, Clock::time_point now) {
    const double waited = std::chrono::duration<double>(now - entry.opened).count();
    std::string peer;
    if (entry.peer >= 0) {
      peer = " (peer rank " + std::to_string(entry.peer);
      if (entry.peer < static_cast<int>(host_of_rank_.size())) peer += " on " + host_of_rank_[entry.peer];
      peer += ")";
    }
    const std::string culprit = census();
    std::fprintf(stderr,
                 "loom: error (rank %d): communication watchdog: %s%s made no progress for %.1f s "
                 "(LOOM_COMM_TIMEOUT_S=%g)%s; aborting the job\n",
                 error_rank(), entry.what, peer.c_str(), waited, timeout(), culprit.c_str());
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
  bool asking_checked_ = false, asking_ = false;
};

}  // namespace

double comm_timeout_from_environment(const char* text) {
  if (!text || !*text) return kDefaultCommTimeoutSeconds;
  const std::string value = std::string(text).substr(0, 80);
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  LOOM_CHECK(end != text && *end == '\0' && std::isfinite(seconds) && seconds >= 0 &&
                 seconds <= kMaxCommTimeoutSeconds,
             "LOOM_COMM_TIMEOUT_S: expected a number of seconds in [0, ", kMaxCommTimeoutSeconds,
             "] (0 disables the watchdog), got '", value, std::strlen(text) > 80 ? "...'" : "'");
  return seconds;
}

std::chrono::steady_clock::time_point comm_deadline(std::chrono::steady_clock::time_point now, double seconds) {
  check_timeout(seconds, "comm_deadline");
  return now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double comm_timeout_seconds() { return Watchdog::instance().timeout(); }
void set_comm_timeout_seconds(double seconds) { Watchdog::instance().set_timeout(seconds); }
void set_watchdog_peer_hosts(std::vector<std::string> host_of_rank) {
  Watchdog::instance().set_peer_hosts(std::move(host_of_rank));
}

WatchdogScope::WatchdogScope(const char* what, int peer, WatchdogReach reach)
    : id_(Watchdog::instance().open(what, peer, reach)) {}
WatchdogScope::~WatchdogScope() { Watchdog::instance().close(id_); }

}  // namespace loom::comm
