// CPU threads: how many threads loom's pool (parallel.h) runs its loops and GEMM panels on. OpenBLAS
// itself stays on one thread per call (cpu_gemm.cpp): loom's pool splits the GEMMs.
#include <loom/core/threads.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include <loom/core/error.h>

namespace loom {

namespace {
int g_threads = 0;

int env_int(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return 0;
  try {
    return std::stoi(value);
  } catch (const std::exception&) {
    LOOM_THROW("environment variable ", name, "='", value, "' is not an integer");
  }
}
}  // namespace

void set_num_threads(int threads) {
  LOOM_CHECK(threads >= 1, "thread count must be at least 1, got ", threads);
  g_threads = threads;
}

int num_threads() { return g_threads > 0 ? g_threads : default_num_threads(); }

int default_num_threads() {
  if (const int requested = env_int("LOOM_NUM_THREADS"); requested > 0) return requested;
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  int local_ranks = 0;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"})
    if (local_ranks <= 0) local_ranks = env_int(name);
  return std::max(1, cores / std::max(1, local_ranks));
}

}  // namespace loom
