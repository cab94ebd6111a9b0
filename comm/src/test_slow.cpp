// LOOM_TEST_SLOW_RANK and LOOM_TEST_BUSY_MS (see test_slow.h).
#include <loom/comm/test_slow.h>

#include <algorithm>
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
  // The two parts as strings of their own: strtol/strtod's end pointers point into them.
  const std::string rank_text = colon == std::string::npos ? "" : value.substr(0, colon);
  const std::string ms_text = colon == std::string::npos ? "" : value.substr(colon + 1);
  char* rank_end = nullptr;
  char* ms_end = nullptr;
  const long target = std::strtol(rank_text.c_str(), &rank_end, 10);
  const double ms = std::strtod(ms_text.c_str(), &ms_end);
  const bool ok = !rank_text.empty() && *rank_end == '\0' && target >= 0 && !ms_text.empty() && *ms_end == '\0' &&
                  ms >= 0 && ms <= 60000;
  LOOM_CHECK(ok, "LOOM_TEST_SLOW_RANK: expected RANK:MS (RANK >= 0, MS in [0, 60000] milliseconds), got '", value, "'");
  return target == rank ? ms : 0;
}

// Entry `rank` of "MS0,MS1,..." in seconds; none when unset or the list is shorter. Every entry
// is checked, whichever rank reads.
std::optional<double> parse_busy(const char* text, int rank) {
  if (!text || !*text) return std::nullopt;
  const std::string value = std::string(text).substr(0, 400);
  std::optional<double> mine;
  std::size_t begin = 0;
  for (int r = 0; begin <= value.size(); ++r) {
    const std::size_t end = std::min(value.find(',', begin), value.size());
    const std::string entry = value.substr(begin, end - begin);
    char* entry_end = nullptr;
    const double ms = std::strtod(entry.c_str(), &entry_end);
    LOOM_CHECK(!entry.empty() && *entry_end == '\0' && ms >= 0 && ms <= 60000,
               "LOOM_TEST_BUSY_MS: expected milliseconds in [0, 60000] per rank, separated by commas, got '", value, "'");
    if (r == rank) mine = ms / 1000;
    begin = end + 1;
  }
  return mine;
}
}  // namespace

double test_slow_ms() {
  static const double ms = parse_slow(std::getenv("LOOM_TEST_SLOW_RANK"), world_rank());
  return ms;
}

std::optional<double> test_busy_seconds() { return parse_busy(std::getenv("LOOM_TEST_BUSY_MS"), world_rank()); }

void test_slow_down() {
  if (const double ms = test_slow_ms(); ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

}  // namespace loom::comm
