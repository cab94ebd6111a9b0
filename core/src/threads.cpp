// CPU threads: how many threads loom's pool (parallel.h) runs its loops and GEMM panels on. OpenBLAS
// itself stays on one thread per call (cpu_gemm.cpp): loom's pool splits the GEMMs.
#include <loom/core/threads.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include <loom/core/error.h>

namespace loom {

namespace {
int g_threads = 0;

constexpr int kMaxThreads = 1024;

// The whole value must be an integer in [0, 1 << 20] ("4abc" is not 4).
int env_int(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return 0;
  const std::string_view text(value);
  int parsed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  LOOM_CHECK(error == std::errc() && end == text.data() + text.size() && parsed >= 0 && parsed <= 1 << 20,
             "environment variable ", name, "='", excerpt(text), "' is not a count (an integer in [0, 1048576])");
  return parsed;
}
}  // namespace

void set_num_threads(int threads) {
  LOOM_CHECK(threads >= 1 && threads <= kMaxThreads, "thread count must be in [1, ", kMaxThreads, "], got ", threads);
  g_threads = threads;
}

int num_threads() { return g_threads > 0 ? g_threads : default_num_threads(); }

int default_num_threads() {
  if (const int requested = env_int("LOOM_NUM_THREADS"); requested > 0) {
    LOOM_CHECK(requested <= kMaxThreads, "LOOM_NUM_THREADS=", requested, " is more than ", kMaxThreads, " threads");
    return requested;
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  int local_ranks = 0;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"})
    if (local_ranks <= 0) local_ranks = env_int(name);
  return std::max(1, cores / std::max(1, local_ranks));
}

}  // namespace loom
