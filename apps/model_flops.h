// Model FLOPs utilisation (MFU) for `loom train`: the model's FLOPs per trained sample and the
// peak rate they are measured against.
//
// FLOPs per sample: `loom describe`'s forward count times 3 (a backward does about twice the
// forward's work); recomputation is not counted, as MFU defines it (the work the model needs, not
// the work the run did). The peak: --peak-gflops when given; else, on CPUs, the GEMM rate of loom's
// own ops::gemm (2048 x 2048 x 2048, best of 3) in the run's GEMM operand type (f32; bf16 under
// --precision bf16, on bf16 kernels where the CPU has them) measured by world rank 0 with as many threads
// as its host's ranks use together (at most the host's cores), times the physical hosts; the other
// ranks sleep meanwhile. It is measured once per machine, build and thread count and cached
// (peak_cache.h), so MFU does not move with the load at each start. On a GPU without --peak-gflops
// there is no peak (GFLOP/s only).
#pragma once

#include <string>

#include <loom/models/model.h>

namespace loom::apps {

double model_flops_per_sample(const ModelSpec& spec);

struct PeakRate {
  double gflops = 0;   // the job's peak, GFLOP/s; 0: unknown
  std::string source;  // how it was found, for the start-up line
};

// Collective over MPI_COMM_WORLD. `given` > 0: that (from --peak-gflops). `cpu`: this rank
// computes on the CPU (otherwise, without `given`, the peak is unknown). `threads`: this rank's
// math threads. `operands`: the run's GEMM operand type (runtime::value_dtype of its precision).
PeakRate job_peak(double given, bool cpu, int threads, DType operands = DType::f32);

// "peak 193 GFLOP/s (f32 GEMM 2048^3 measured with 2 threads)", or why there is none.
std::string peak_text(const PeakRate& peak);
// "12.3 GFLOP/s, 45% MFU", or "12.3 GFLOP/s" without a peak.
std::string flops_text(double flops_per_sample, double samples_per_second, const PeakRate& peak);

}  // namespace loom::apps
