#include <loom/comm/mpi_session.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>
#include <string>
#include <thread>

#include <unistd.h>

#include <mpi.h>

#include <loom/comm/detail/test_hooks.h>
#include <loom/comm/watchdog.h>
#include <loom/base/error.h>
#include <loom/core/log.h>

namespace loom::comm {

namespace {

struct Session {
  int rank = 0;
  int size = 1;
  bool thread_multiple = false;
};

Session g_session;
std::once_flag g_once;
// A duplicate of the world on which failing ranks agree (end_with_error), apart from any
// collective the world may have in flight.
MPI_Comm g_errors = MPI_COMM_NULL;

void finalize_at_exit() { finalize_mpi(); }

}  // namespace

void ensure_mpi() {
  std::call_once(g_once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      // MPI_Init_thread waits for every rank of the job: one that stopped or never started would
      // hold the others here for ever. MPI cannot be used yet, so this scope ends the process.
      WatchdogScope watch("MPI_Init_thread", -1, WatchdogReach::process);
      LOOM_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
      std::atexit(finalize_at_exit);
    } else {
      MPI_Query_thread(&provided);
    }
    // Return codes instead of MPI's own abort, so LOOM_MPI_CHECK can name the call and the rank.
    // Communicators created later inherit this handler.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
      WatchdogScope watch("MPI_Comm_dup (the error agreement's communicator)", -1, WatchdogReach::process);
      LOOM_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &g_errors));
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_session.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_session.size);
    g_session.thread_multiple = provided >= MPI_THREAD_MULTIPLE;
    log::init(g_session.rank);
    test_pause_after_mpi_init(g_session.rank);
  });
}

int world_rank() {
  ensure_mpi();
  return g_session.rank;
}

int world_size() {
  ensure_mpi();
  return g_session.size;
}

void finalize_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  // MPI_Finalize waits for every rank in Open MPI: a rank stopped before its end would hold the
  // others here for ever.
  WatchdogScope watch("MPI_Finalize", -1, WatchdogReach::process);
  MPI_Finalize();
}

bool mpi_thread_multiple() {
  ensure_mpi();
  return g_session.thread_multiple;
}

int exit_status(const std::exception& error) {
  return dynamic_cast<const CommunicationError*>(&error) != nullptr ? 3 : 1;
}

namespace {

// The user's line: loom's source locations (" [file.cpp:42, rank 3]", where a check threw) are for
// developers, kept with LOOM_DEBUG=1.
std::string user_message(const char* message) {
  const char* debug = std::getenv("LOOM_DEBUG");
  if (debug && std::strcmp(debug, "1") == 0) return message;
  static const std::regex location(R"( \[[A-Za-z0-9_.+-]+\.(cpp|h|cu|cuh):[0-9]+(, rank [0-9]+)?\])");
  return std::regex_replace(std::string(message), location, "");
}

}  // namespace

namespace {

// Whether every rank of the job fails too (they read the same flags, plans and files, so bad input
// fails them all at one point; a checkpoint phase gives every rank the first failure's message,
// comm::first_failure): they agree on g_errors within 10 s (a loaded, oversubscribed node delays
// some ranks by seconds). `speaker`: the lowest rank whose message names the cause, not only that
// "another rank" failed. A rank failing alone waits that long, then aborts the job.
bool every_rank_fails(int rank, const std::string& message, int& speaker) {
  constexpr auto kAgreement = std::chrono::seconds(10);
  if (g_errors == MPI_COMM_NULL) return false;
  struct {
    int secondary;
    int rank;
  } mine{message.find("another rank") != std::string::npos ? 1 : 0, rank}, chosen{0, rank};
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Iallreduce(&mine, &chosen, 1, MPI_2INT, MPI_MINLOC, g_errors, &request) != MPI_SUCCESS) return false;
  const auto deadline = std::chrono::steady_clock::now() + kAgreement;
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  speaker = chosen.rank;
  return done != 0;
}

// Whether an MPI launcher started this process (its environment says so), so that the other ranks
// may be failing at the same point before MPI has started.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

}  // namespace

int end_with_error(const char* message, int status) {
  const std::string text = user_message(message);
  int initialized = 0, finalized = 0, size = 1, rank = 0;
  MPI_Initialized(&initialized);
  if (!initialized && launched_by_mpi()) {  // the others may fail here too: start MPI to agree
    try {
      ensure_mpi();
    } catch (const std::exception&) {
    }
    MPI_Initialized(&initialized);
  }
  MPI_Finalized(&finalized);
  const bool running = initialized && !finalized;
  if (running) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  }
  int speaker = rank;
  if (size > 1 && !every_rank_fails(rank, text, speaker)) {  // the others run on: this rank names itself
    std::fprintf(stderr, "loom: error (rank %d): %s\n", rank, text.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    return status;
  }
  if (rank == speaker) {  // one line for the whole job
    std::fprintf(stderr, "loom: error: %s\n", text.c_str());
    std::fflush(stderr);
  }
  if (running) finalize_mpi();
  return status;
}

}  // namespace loom::comm
