#include <loom/comm/runtime.h>

#include <cstdlib>
#include <mutex>

#include <mpi.h>

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

void finalize_at_exit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

}  // namespace

void ensure_mpi() {
  std::call_once(g_once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
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

bool mpi_thread_multiple() {
  ensure_mpi();
  return g_runtime.thread_multiple;
}

}  // namespace loom::comm
