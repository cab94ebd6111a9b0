// Logging through spdlog. Once the rank is known, every line carries "[rank N]".
#pragma once

#include <spdlog/spdlog.h>

namespace loom::log {

// Sets the pattern (with the rank once rank >= 0) and the level from LOOM_LOG_LEVEL.
void init(int rank = -1);

}  // namespace loom::log
