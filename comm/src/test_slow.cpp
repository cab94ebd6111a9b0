// LOOM_TEST_SLOW_RANK (see test_slow.h).
#include <loom/comm/test_slow.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <loom/comm/runtime.h>
#include <loom/core/error.h>

namespace loom::comm {

namespace {
// The milliseconds for `rank` from "RANK:MS", 0 when unset or meant for another rank.
double parse_slow(const char* text, int rank) {
  if (!text || !*text) return 0;
  const std::string value = std::string(text).substr(0, 80);
  const std::size_t colon = value.find(':');
  char* end = nullptr;
  const long target = colon == std::string::npos ? -1 : std::strtol(value.substr(0, colon).c_str(), &end, 10);
  const bool rank_ok = colon != std::string::npos && colon > 0 && *end == '\0' && target >= 0;
  const double ms = rank_ok ? std::strtod(value.substr(colon + 1).c_str(), &end) : -1;
  LOOM_CHECK(rank_ok && *end == '\0' && ms >= 0 && ms <= 60000 && colon + 1 < value.size(),
             "LOOM_TEST_SLOW_RANK: expected RANK:MS (RANK >= 0, MS in [0, 60000] milliseconds), got '", value, "'");
  return target == rank ? ms : 0;
}
}  // namespace

double test_slow_ms() {
  static const double ms = parse_slow(std::getenv("LOOM_TEST_SLOW_RANK"), world_rank());
  return ms;
}

void test_slow_down() {
  if (const double ms = test_slow_ms(); ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

}  // namespace loom::comm
