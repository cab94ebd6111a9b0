// LOOM_TEST_PAUSE_AT (see test_pause.h).
#include <loom/comm/test_pause.h>

#include <loom/comm/test_slow.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

#include <loom/comm/runtime.h>
#include <loom/core/error.h>

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
  std::fflush(stderr);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace loom::comm
