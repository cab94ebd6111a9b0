// Tests of oneDNN's bf16 kernels (ops::cpu_bf16_kernels): one `const test::SkipWithoutBf16Kernels
// skip_at_start;` at namespace scope ends the executable with 77 (ctest's SKIP_RETURN_CODE, a
// visible skip) and a line saying why where the CPU lacks AVX-512 BF16 or loom has no oneDNN; and
// the bf16-rounded values of an f32 tensor, in double, for references.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <loom/core/ops.h>

namespace loom::test {

struct SkipWithoutBf16Kernels {
  SkipWithoutBf16Kernels() {
    if (ops::cpu_bf16_kernels_supported()) return;
    std::printf("skipped: no oneDNN bf16 kernels on this CPU (AVX-512 BF16 absent, or loom built without oneDNN)\n");
    std::fflush(stdout);
    std::_Exit(77);
  }
};

inline std::vector<double> bf16_rounded(const Tensor& t) {
  Tensor r = t.clone();
  ops::round_to_bf16_(r);
  return r.to_double_vector();
}

}  // namespace loom::test
