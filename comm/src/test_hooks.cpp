// loom's test-only hooks (see detail/test_hooks.h).
#include <loom/comm/detail/test_hooks.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

#include <loom/comm/mpi_session.h>
#include <loom/base/error.h>

namespace loom::comm {

namespace {

constexpr const char* kPhaseNames[] = {"warmup", "steady", "allreduce"};

struct PauseTarget {
  bool armed = false;
  PausePhase phase = PausePhase::warmup;
  int rank = 0;
  long arrival = 1;
};

void check_value(bool ok, const std::string& value) {
  LOOM_CHECK(ok, "LOOM_TEST_PAUSE_AT: expected PHASE:RANK[:N] (PHASE warmup, steady or allreduce; RANK >= 0; N >= 1), got '",
             value, "'");
}

long parse_count(const std::string& text, const std::string& value, long low) {
  char* end = nullptr;
  const long number = std::strtol(text.c_str(), &end, 10);
  check_value(!text.empty() && *end == '\0' && number >= low && number <= 1000000000L, value);
  return number;
}

PauseTarget parse_target(const char* text) {
  PauseTarget target;
  if (!text || !*text) return target;
  const std::string value = std::string(text).substr(0, 80);
  const std::size_t colon = value.find(':');
  const std::size_t second = colon == std::string::npos ? colon : value.find(':', colon + 1);
  const std::string phase = value.substr(0, colon);
  bool known = false;
  for (int p = 0; p < 3; ++p) {
    if (phase != kPhaseNames[p]) continue;
    target.phase = static_cast<PausePhase>(p);
    known = true;
  }
  check_value(known && colon != std::string::npos, value);
  target.rank = static_cast<int>(parse_count(value.substr(colon + 1, second - colon - 1), value, 0));
  if (second != std::string::npos) target.arrival = parse_count(value.substr(second + 1), value, 1);
  target.armed = true;
  return target;
}

const PauseTarget& pause_target() {
  static const PauseTarget target = parse_target(std::getenv("LOOM_TEST_PAUSE_AT"));
  return target;
}


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

[[noreturn]] void sleep_for_good() {
  std::fflush(stderr);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace

void check_test_hooks() {
  pause_target();
  test_slow_ms();
  test_busy_seconds();
}

void test_pause_at(PausePhase phase) {
  const PauseTarget& target = pause_target();
  if (!target.armed || phase != target.phase) return;
  static std::atomic<long> arrivals{0};
  if (world_rank() != target.rank || ++arrivals != target.arrival) return;
  std::fprintf(stderr, "loom: test hook: rank %d pid %ld paused at %s %ld (LOOM_TEST_PAUSE_AT)\n", target.rank,
               static_cast<long>(::getpid()), kPhaseNames[static_cast<int>(phase)], target.arrival);
  sleep_for_good();
}


void test_pause_after_mpi_init(int rank) {
  const char* named = std::getenv("LOOM_TEST_PAUSE_AFTER_MPI_INIT");
  if (!named || !*named || std::to_string(rank) != named) return;
  std::fprintf(stderr, "loom: test hook: rank %d pid %ld paused after MPI_Init_thread (LOOM_TEST_PAUSE_AFTER_MPI_INIT)\n",
               rank, static_cast<long>(::getpid()));
  sleep_for_good();
}

double test_slow_ms() {
  static const double ms = parse_slow(std::getenv("LOOM_TEST_SLOW_RANK"), world_rank());
  return ms;
}

std::optional<double> test_busy_seconds() { return parse_busy(std::getenv("LOOM_TEST_BUSY_MS"), world_rank()); }

void test_slow_down() {
  if (const double ms = test_slow_ms(); ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

}  // namespace loom::comm
