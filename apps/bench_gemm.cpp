// `loom bench gemm`: loom's CPU gemm next to OpenBLAS's cblas_sgemm called directly, same
// threads, same run, best of several repetitions of each; with --device cuda, loom's GPU gemm next
// to cuBLAS (bench_gemm_cuda.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>
#include <nlohmann/json.hpp>

#include <loom/base/error.h>
#include <loom/core/ops.h>
#include <loom/core/rng.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>

#include "bench_gemm_cuda.h"
#include "commands.h"

namespace loom::apps {

namespace {

struct GemmCase {
  long m, n, k;
  bool ta, tb;
};

std::string trans_name(const GemmCase& c) { return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N"); }

// Best of the repetitions: the same deterministic work on a shared machine, so the fastest run is
// the least disturbed one (both sides are measured the same way).
double best(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void run(bool json, int threads, int repeats) {
  set_num_threads(threads > 0 ? threads : default_num_threads());
  std::vector<GemmCase> cases;
  for (long s : {256L, 512L, 1024L, 2048L}) cases.push_back({s, s, s, false, false});
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      if (!(ta && tb)) {
        cases.push_back({4096, 1024, 1024, ta, tb});  // attention projections: tokens x hidden
        cases.push_back({1024, 4096, 1024, ta, tb});  // MLP up-projection
      }
  nlohmann::json rows = nlohmann::json::array();
  if (!json)
    std::printf("%6s %6s %6s %5s %12s %12s %10s   (threads %d; speed/BLAS above 1: loom is faster)\n", "m", "n", "k",
                "trans", "loom GF/s", "blas GF/s", "speed/BLAS", num_threads());
  for (const GemmCase& c : cases) {
    Tensor a = Tensor::empty(c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k});
    Tensor b = Tensor::empty(c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n});
    Tensor out = Tensor::zeros({c.m, c.n});
    rng::uniform(a, 1, 1, -1, 1);
    rng::uniform(b, 1, 2, -1, 1);
    const double flops = 2.0 * c.m * c.n * c.k;
    const int reps = std::max(5, static_cast<int>(repeats * 4e9 / flops / 8));
    auto time_loom = [&] {
      Stopwatch w;
      ops::gemm(a, c.ta, b, c.tb, out);
      return w.elapsed_ms();
    };
    auto time_blas = [&] {
      Stopwatch w;
      cblas_sgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans,
                  static_cast<int>(c.m), static_cast<int>(c.n), static_cast<int>(c.k), 1.0f, a.data<float>(),
                  static_cast<int>(c.ta ? c.m : c.k), b.data<float>(), static_cast<int>(c.tb ? c.k : c.n), 0.0f,
                  out.data<float>(), static_cast<int>(c.n));
      return w.elapsed_ms();
    };
    // loom runs OpenBLAS on one thread and splits the work over its own pool; the reference is
    // OpenBLAS threading itself. Each side runs as a block (after a warm-up), because OpenBLAS's
    // idle threads spin for a while after a call and would slow loom's pool if the two alternated.
    std::vector<double> loom_ms, blas_ms;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // OpenBLAS's threads park (~0.1 s)
    time_loom();
    for (int r = 0; r < reps; ++r) loom_ms.push_back(time_loom());
    openblas_set_num_threads(num_threads());
    time_blas();
    for (int r = 0; r < reps; ++r) blas_ms.push_back(time_blas());
    openblas_set_num_threads(1);
    const double loom_gflops = flops / best(loom_ms) / 1e6, blas_gflops = flops / best(blas_ms) / 1e6;
    const double ratio = loom_gflops / blas_gflops;
    if (json) {
      rows.push_back({{"m", c.m}, {"n", c.n}, {"k", c.k}, {"trans", trans_name(c)}, {"loom_gflops", loom_gflops},
                      {"blas_gflops", blas_gflops}, {"ratio", ratio}});
    } else {
      std::printf("%6ld %6ld %6ld %5s %12.1f %12.1f %10.3f\n", c.m, c.n, c.k, trans_name(c).c_str(), loom_gflops,
                  blas_gflops, ratio);
      std::fflush(stdout);
    }
  }
  if (json) std::printf("%s\n", rows.dump(1).c_str());
}

}  // namespace

void add_bench_gemm_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand(
      "gemm", "loom's gemm next to the BLAS it calls: OpenBLAS cblas_sgemm on the CPU, cuBLAS with --device cuda");
  static bool json = false;
  static int threads = 0, repeats = 8;
  static std::string device = "cpu", dtype = "f32";
  static double peak_tflops = 0;
  cmd->add_option("--device", device, "cpu (GFLOP/s against OpenBLAS) or cuda (TFLOP/s against cuBLAS on GPU 0)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--dtype", dtype, "f32, or bf16 (tensor cores, f32 accumulation; --device cuda only)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  cmd->add_option("--peak-tflops", peak_tflops,
                  "the device's peak for --dtype, for the % of peak column (default: H100/H200/A100 by name)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", json, "print a JSON array of rows {m,n,k,trans,loom_gflops,blas_gflops,ratio}");
  cmd->add_option("--threads", threads, "BLAS threads (default: LOOM_NUM_THREADS or cores / local ranks)");
  cmd->add_option("--repeats", repeats, "timing effort (more = longer, steadier)")->check(CLI::PositiveNumber);
  cmd->callback([] {
    if (parse_device_request(device).device.is_cuda()) return bench_gemm_cuda(json, parse_dtype(dtype), repeats, peak_tflops);
    LOOM_CHECK(dtype == "f32", "bench gemm --dtype ", dtype, ": the CPU comparison is f32 only (use --device cuda)");
    run(json, threads, repeats);
  });
}

}  // namespace loom::apps
