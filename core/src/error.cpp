#include <loom/core/error.h>

#include <atomic>
#include <cstring>

namespace loom {

namespace {
std::atomic<int> g_rank{-1};
}

void set_error_rank(int rank) { g_rank = rank; }
int error_rank() { return g_rank; }

namespace detail {

[[noreturn]] void throw_error(const char* file, int line, const std::string& message) {
  const char* base = std::strrchr(file, '/');
  std::ostringstream out;
  out << message << " [" << (base ? base + 1 : file) << ":" << line;
  if (g_rank >= 0) out << ", rank " << g_rank;
  out << "]";
  throw Error(out.str());
}

}  // namespace detail
}  // namespace loom
