// CPU threads: how many threads loom's pool (parallel.h) runs its loops and GEMM panels on. OpenBLAS
// itself stays on one thread per call (cpu_gemm.cpp): loom's pool splits the GEMMs.
#include <loom/core/threads.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include <sched.h>

#include <spdlog/spdlog.h>

#include <loom/core/env.h>
#include <loom/base/error.h>

namespace loom {

namespace {
std::atomic<int> g_threads{0};

constexpr int kMaxThreads = 1024;

// A count from the environment (0 when unset): the whole value must be an integer in [0, 2^20].
int env_int(const char* name) { return static_cast<int>(env_count(name, 0, 1 << 20)); }

// One line per process the first time more threads are asked for than this process has cores.
void warn_if_oversubscribed(int threads, const char* source) {
  const int cores = affinity_cores();
  if (threads <= cores) return;
  static std::once_flag once;
  std::call_once(once, [&] {
    spdlog::warn("{} threads requested ({}) but this process may run on {} core{} (its CPU affinity): the threads "
                 "will share {} and run slower. Under mpirun, pass --bind-to none (Open MPI binds a job of 1 or 2 "
                 "ranks to one core each) or ask for fewer threads.",
                 threads, source, cores, cores == 1 ? "" : "s", cores == 1 ? "it" : "them");
  });
}
}  // namespace

void set_num_threads(int threads) {
  LOOM_CHECK(threads >= 1 && threads <= kMaxThreads, "thread count must be in [1, ", kMaxThreads, "], got ", threads);
  warn_if_oversubscribed(threads, "--threads");
  g_threads = threads;
}

int num_threads() {
  if (const int threads = g_threads.load(std::memory_order_relaxed); threads > 0) return threads;
  const int threads = default_num_threads();  // once: parallel_for asks at every call
  g_threads.store(threads, std::memory_order_relaxed);
  return threads;
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));  // more CPUs than cpu_set_t holds
}

int local_rank_count() {
  int local_ranks = 0;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"})
    if (local_ranks <= 0) local_ranks = env_int(name);
  return local_ranks;
}

int default_num_threads() {
  if (const int requested = env_int("LOOM_NUM_THREADS"); requested > 0) {
    LOOM_CHECK(requested <= kMaxThreads, "LOOM_NUM_THREADS=", requested, " is more than ", kMaxThreads, " threads");
    warn_if_oversubscribed(requested, "LOOM_NUM_THREADS");
    return requested;
  }
  const int local_ranks = local_rank_count();
  // Bound ranks (each its own cores) get their affinity; unbound ones share the machine's cores.
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, std::min(affinity_cores(), machine / std::max(1, local_ranks)));
}

}  // namespace loom
