// Model FLOPs utilisation (see model_flops.h).
#include "model_flops.h"

#include <algorithm>
#include <optional>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <mpi.h>

#include <loom/comm/mpi_session.h>
#include <loom/comm/topology.h>
#include <loom/base/error.h>
#include <loom/core/ops.h>
#include <loom/core/rng.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>

#include "peak_cache.h"

namespace loom::apps {

namespace {

// GFLOP/s of loom's GEMM of f32 tensors at 2048^3 with `threads` threads, its operands rounded to
// `operands` as the run's GEMMs round them (bf16 runs: oneDNN's bf16 kernels where the CPU has them):
// best of 3 after a warm-up.
double gemm_gflops(int threads, DType operands) {
  const int before = num_threads();
  set_num_threads(threads);
  const ops::GemmOperandScope math(operands);
  constexpr std::int64_t n = 2048;
  Tensor a = Tensor::empty({n, n}), b = Tensor::empty({n, n}), c = Tensor::zeros({n, n});
  rng::uniform(a, 1, 1, -1, 1);
  rng::uniform(b, 1, 2, -1, 1);
  double best_ms = 1e300;
  for (int rep = 0; rep < 4; ++rep) {
    Stopwatch watch;
    ops::gemm(a, false, b, false, c);
    if (rep > 0) best_ms = std::min(best_ms, watch.elapsed_ms());
  }
  set_num_threads(before);
  return 2.0 * n * n * n / best_ms / 1e6;
}

// A barrier the waiting ranks sleep in (MPI's own waits spin, and would take the cores rank 0 measures).
void sleeping_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

double model_flops_per_sample(const ModelSpec& spec) {
  try {
    return 3.0 * summarize(spec, 1).flops;
  } catch (const Error&) {
    return 0;  // a model of the caller's own that cannot be described without memory
  }
}

PeakRate job_peak(double given, bool cpu, int threads, DType operands) {
  LOOM_CHECK(given >= 0, "--peak-gflops must be >= 0 (0: measure), got ", given);
  if (given > 0) return {given, "--peak-gflops"};
  const comm::Topology hosts = comm::Topology::physical();
  std::vector<int> all(static_cast<std::size_t>(comm::world_size()));
  const int mine = cpu ? threads : -1;
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  if (std::any_of(all.begin(), all.end(), [](int t) { return t < 0; })) return {0, "no CPU peak for a GPU run"};
  // Rank 0's host: its ranks' threads together, at most its cores; rank 0 measures with as many
  // of them as it may run on, and the rest are counted at the same rate per thread.
  int host_threads = 0;
  for (int r : hosts.ranks_of_node(hosts.node_of(0))) host_threads += all[static_cast<std::size_t>(r)];
  host_threads = std::min(host_threads, static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  const int measured_threads = std::max(1, std::min(host_threads, affinity_cores()));
  double rate = 0;
  std::string cache_note;  // rank 0's, which prints the header
  if (comm::world_rank() == 0) {
    const std::string path = peak_cache_path(), key = peak_cache_key(operands, measured_threads);
    const std::optional<double> cached = cached_peak(path, key);
    rate = cached ? *cached : gemm_gflops(measured_threads, operands);
    if (cached)
      cache_note = ", cached in " + path;
    else if (store_peak(path, key, rate))
      cache_note = ", now cached in " + path;
  }
  sleeping_barrier();
  MPI_Bcast(&rate, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const double per_host = rate * host_threads / measured_threads;
  return {per_host * hosts.nodes(),
          loom::detail::concat(dtype_name(operands), " GEMM 2048^3 measured with ", measured_threads, measured_threads == 1 ? " thread" : " threads",
                               host_threads != measured_threads ? loom::detail::concat(", scaled to ", host_threads) : "",
                               hosts.nodes() > 1 ? loom::detail::concat(", x ", hosts.nodes(), " hosts") : "", cache_note)};
}

std::string peak_text(const PeakRate& peak) {
  if (peak.gflops <= 0) return peak.source.empty() ? "no peak (quiet, no metrics)" : peak.source;
  char text[64];
  std::snprintf(text, sizeof text, "peak %.4g GFLOP/s (", peak.gflops);
  return text + peak.source + ")";
}

std::string flops_text(double flops_per_sample, double samples_per_second, const PeakRate& peak) {
  const double gflops = flops_per_sample * samples_per_second / 1e9;
  char text[96];
  if (peak.gflops > 0)
    std::snprintf(text, sizeof text, "%.3g GFLOP/s, %.0f%% MFU", gflops, 100.0 * gflops / peak.gflops);
  else
    std::snprintf(text, sizeof text, "%.3g GFLOP/s", gflops);
  return text;
}

}  // namespace loom::apps
