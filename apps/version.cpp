// `loom --version`: what this binary is (the commit, build type, backends and the CPU ISA it was
// compiled for), so a figure or a bug report can name it.
#include "version.h"

#include "loom_git_describe.h"  // generated at build time (cmake/write_version.cmake)

namespace loom::apps {

namespace {
// The widest x86 vector ISA the compiler was allowed (-march), which the CPU kernels use.
const char* compiled_isa() {
#if defined(__AVX512BF16__)
  return "AVX-512 + BF16";
#elif defined(__AVX512F__)
  return "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "AVX2 + FMA";
#elif defined(__x86_64__)
  return "x86-64 (SSE2)";
#else
  return "not x86-64";
#endif
}
}  // namespace

std::string version_text() {
  std::string text = std::string("loom ") + LOOM_GIT_DESCRIBE + " (" + LOOM_BUILD_TYPE + " build";
#ifdef LOOM_WITH_CUDA
  text += ", CUDA on";
#else
  text += ", CUDA off";
#endif
  text += LOOM_WITH_ONEDNN ? ", oneDNN on" : ", oneDNN off";
  text += std::string(", CPU ISA ") + compiled_isa() + (LOOM_NATIVE_BUILD ? " (-march=native)" : "") + ")";
  return text;
}

}  // namespace loom::apps
