// The gpu-labelled tests without a GPU (or in a build without CUDA): they say so and end the
// process with 77, ctest's SKIP_RETURN_CODE (loom_add_test), a visible skip rather than a pass.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <loom/core/device.h>

namespace loom::test {

// Returns when there is a CUDA device; otherwise prints "skipped: no GPU (...)" and _Exits with 77
// (no exit handlers or static destructors: it may run during static initialisation). Under
// mpiexec every rank decides for itself, and each exits 77.
inline void skip_without_gpu() {
  if (cuda_compiled() && cuda_device_count() > 0) return;
  std::printf("skipped: no GPU (CUDA backend %s)\n", cuda_compiled() ? "compiled, no CUDA device" : "not compiled");
  std::fflush(stdout);
  std::_Exit(77);
}

// One `const SkipWithoutGpu skip_without_gpu_at_start;` at namespace scope skips the whole
// executable before Catch2 starts.
struct SkipWithoutGpu {
  SkipWithoutGpu() { skip_without_gpu(); }
};

}  // namespace loom::test
