#include <loom/comm/runtime.h>

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

#include <loom/comm/watchdog.h>
#include <loom/core/error.h>
#include <loom/core/log.h>

namespace loom::comm {

namespace {

struct Runtime {
  int rank = 0;
  int size = 1;
  bool thread_multiple = false;
};

Runtime g_runtime;
std::once_flag g_once;

void finalize_at_exit() { finalize_mpi(); }

// Test-only hook (docs/reliability.md): the rank named by LOOM_TEST_PAUSE_AFTER_MPI_INIT says so on
// stderr and sleeps right after MPI_Init_thread, so that a fault test can stop it at start-up.
void test_pause_after_init(int rank) {
  const char* named = std::getenv("LOOM_TEST_PAUSE_AFTER_MPI_INIT");
  if (!named || !*named || std::to_string(rank) != named) return;
  std::fprintf(stderr, "loom: test hook: rank %d pid %ld paused after MPI_Init_thread (LOOM_TEST_PAUSE_AFTER_MPI_INIT)\n",
               rank, static_cast<long>(::getpid()));
  std::fflush(stderr);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

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
    MPI_Comm_rank(MPI_COMM_WORLD, &g_runtime.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_runtime.size);
    g_runtime.thread_multiple = provided >= MPI_THREAD_MULTIPLE;
    log::init(g_runtime.rank);
    test_pause_after_init(g_runtime.rank);
  });
}

int world_rank() {
  ensure_mpi();
  return g_runtime.rank;
}

int world_size() {
  ensure_mpi();
  return g_runtime.size;
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
  return g_runtime.thread_multiple;
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

int end_with_error(const char* message, int status) {
  const std::string text = user_message(message);
  const int rank = error_rank();
  if (rank >= 0)
    std::fprintf(stderr, "loom: error (rank %d): %s\n", rank, text.c_str());
  else
    std::fprintf(stderr, "loom: error: %s\n", text.c_str());
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, status);
    MPI_Finalize();
  }
  return status;
}

}  // namespace loom::comm
