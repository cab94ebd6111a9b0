// Shared by the libFuzzer targets (tests/fuzz, docs/reliability.md "Fuzzing"). A target feeds its
// input to the same function the CLI calls; a loom::Error is a clean rejection, anything else
// (a crash, a sanitizer report, another exception escaping, a timeout, running out of memory) is
// a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

#include <loom/base/error.h>

namespace loom::fuzz {

inline std::string as_string(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs `body`; a loom::Error is how a parser refuses bad input, so it is swallowed.
template <typename Body>
void rejecting_loom_errors(Body&& body) {
  try {
    body();
  } catch (const loom::Error&) {
  }
}

// A directory of this fuzzing process (one per process: libFuzzer's -jobs/-workers run several).
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string templ = "/tmp/loom-fuzz-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      std::perror("loom fuzz: mkdtemp");
      std::abort();
    }
    return templ;
  }();
  return dir;
}

// Writes `bytes` to scratch_dir()/name and returns the path (for parsers that read a file).
inline std::string write_scratch_file(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "loom fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace loom::fuzz
