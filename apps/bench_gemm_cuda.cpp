// `loom bench gemm --device cuda` (bench_gemm_cuda.h). Both sides run the same problems on the same
// device buffers, each as a block of calls between two device-wide synchronisations, best of
// several blocks: the figure is the device's, not the launch latency's.
#include "bench_gemm_cuda.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/core/device.h>
#include <loom/base/error.h>
#include <loom/core/ops.h>
#include <loom/core/rng.h>
#include <loom/core/timer.h>

#ifdef LOOM_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

namespace loom::apps {

#ifdef LOOM_WITH_CUDA

namespace {

struct Problem {
  long m, n, k;
  bool ta, tb;
};

// Dense peak TFLOP/s of the SXM parts by name (the vendors' data sheets), 0 when unknown.
double table_peak(const std::string& name, DType dtype) {
  const bool bf16 = dtype == DType::bf16;
  if (name.find("H200") != std::string::npos || name.find("H100") != std::string::npos) return bf16 ? 989.4 : 66.9;
  if (name.find("A100") != std::string::npos) return bf16 ? 312.0 : 19.5;
  return 0;
}

// The reference: cuBLAS on its own handle and the default stream, row-major as loom computes it
// (c^T = op(b)^T op(a)^T in cuBLAS's column-major view).
void direct(cublasHandle_t handle, const Problem& p, DType dtype, const Tensor& a, const Tensor& b, Tensor& c) {
  const float one = 1, zero = 0;
  const int lda = static_cast<int>(p.ta ? p.m : p.k), ldb = static_cast<int>(p.tb ? p.k : p.n);
  const cublasOperation_t opa = p.ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = p.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(p.n), n = static_cast<int>(p.m), k = static_cast<int>(p.k);
  if (dtype == DType::f32)
    LOOM_CUBLAS_CHECK(cublasSgemm(handle, opb, opa, m, n, k, &one, static_cast<const float*>(b.raw_data()), ldb,
                                  static_cast<const float*>(a.raw_data()), lda, &zero,
                                  static_cast<float*>(c.raw_data()), m));
  else
    LOOM_CUBLAS_CHECK(cublasGemmEx(handle, opb, opa, m, n, k, &one, b.raw_data(), CUDA_R_16BF, ldb, a.raw_data(),
                                   CUDA_R_16BF, lda, &zero, c.raw_data(), CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
}

// The reference's own cuBLAS handle (not loom's), released however the bench ends.
struct OwnHandle {
  OwnHandle() { LOOM_CUBLAS_CHECK(cublasCreate(&handle)); }
  ~OwnHandle() { cublasDestroy(handle); }
  OwnHandle(const OwnHandle&) = delete;
  OwnHandle& operator=(const OwnHandle&) = delete;
  cublasHandle_t handle = nullptr;
};

template <typename Work>
double best_ms_per_call(int calls, int blocks, Work&& work) {
  work();  // warm-up (cuBLAS picks its kernel, loom its workspace)
  double best = 1e300;
  for (int r = 0; r < blocks; ++r) {
    LOOM_CUDA_CHECK(cudaDeviceSynchronize());
    Stopwatch watch;
    for (int i = 0; i < calls; ++i) work();
    LOOM_CUDA_CHECK(cudaDeviceSynchronize());
    best = std::min(best, watch.elapsed_ms() / calls);
  }
  return best;
}

std::vector<Problem> problems() {
  std::vector<Problem> list;
  for (long s : {1024L, 2048L, 4096L, 8192L}) list.push_back({s, s, s, false, false});
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      if (!(ta && tb)) {
        list.push_back({8192, 3072, 768, ta, tb});  // GPT-2 small MLP up-projection, 8192 tokens
        list.push_back({8192, 768, 3072, ta, tb});  // and down
      }
  return list;
}

}  // namespace

void bench_gemm_cuda(bool json, DType dtype, int repeats, double peak_tflops) {
  const Device gpu = resolve_device_flag("cuda", 0);
  cudaDeviceProp props{};
  LOOM_CUDA_CHECK(cudaGetDeviceProperties(&props, gpu.index));
  const double peak = peak_tflops > 0 ? peak_tflops : table_peak(props.name, dtype);
  const OwnHandle own;
  nlohmann::json rows = nlohmann::json::array();
  if (!json) {
    char peak_text[48] = "unknown (give --peak-tflops)";
    if (peak > 0) std::snprintf(peak_text, sizeof peak_text, "%.1f", peak);
    std::printf("%s, %s, peak %s TFLOP/s (speed/cuBLAS above 1: loom is faster)\n%6s %6s %6s %5s %12s %12s %13s %7s\n",
                props.name, dtype_name(dtype).data(), peak_text, "m", "n", "k", "trans", "loom TF/s", "cuBLAS TF/s",
                "speed/cuBLAS", "% peak");
  }
  for (const Problem& p : problems()) {
    Tensor a = Tensor::empty(p.ta ? Shape{p.k, p.m} : Shape{p.m, p.k}), b = Tensor::empty(p.tb ? Shape{p.n, p.k} : Shape{p.k, p.n});
    rng::uniform(a, 1, 1, -1, 1);
    rng::uniform(b, 1, 2, -1, 1);
    const Tensor ga = a.to(dtype).to(gpu), gb = b.to(dtype).to(gpu);
    Tensor gc = Tensor::empty({p.m, p.n}, dtype, gpu);
    const double flops = 2.0 * p.m * p.n * p.k;
    const int calls = std::max(3, static_cast<int>(repeats * 2e12 / flops / 8));
    const double loom_ms = best_ms_per_call(calls, 3, [&] { ops::gemm(ga, p.ta, gb, p.tb, gc); });
    const double cublas_ms = best_ms_per_call(calls, 3, [&] { direct(own.handle, p, dtype, ga, gb, gc); });
    const double loom_tf = flops / loom_ms / 1e9, cublas_tf = flops / cublas_ms / 1e9;
    const double of_peak = peak > 0 ? 100 * loom_tf / peak : 0;
    const std::string trans = std::string(p.ta ? "T" : "N") + (p.tb ? "T" : "N");
    if (json)
      rows.push_back({{"m", p.m}, {"n", p.n}, {"k", p.k}, {"trans", trans}, {"dtype", dtype_name(dtype)},
                      {"loom_tflops", loom_tf}, {"cublas_tflops", cublas_tf}, {"ratio", loom_tf / cublas_tf},
                      {"percent_of_peak", of_peak}});
    else
      std::printf("%6ld %6ld %6ld %5s %12.1f %12.1f %13.3f %7.1f\n", p.m, p.n, p.k, trans.c_str(), loom_tf, cublas_tf,
                  loom_tf / cublas_tf, of_peak);
    std::fflush(stdout);
  }
  if (json) std::printf("%s\n", rows.dump(1).c_str());
}

#else

void bench_gemm_cuda(bool, DType, int, double) { resolve_device_flag("cuda", 0); }  // the no-CUDA-backend error

#endif

}  // namespace loom::apps
