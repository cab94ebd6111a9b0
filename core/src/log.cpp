#include <loom/core/log.h>

#include <cstdlib>
#include <string>

#include <loom/base/error.h>

namespace loom::log {

void init(int rank) {
  if (rank >= 0) {
    set_error_rank(rank);
    spdlog::set_pattern("[%H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%^%l%$] %v");
  } else {
    spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  }
  if (const char* level = std::getenv("LOOM_LOG_LEVEL")) spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace loom::log
