// Test-only hook: LOOM_TEST_SLOW_RANK=RANK:MS makes world rank RANK sleep MS milliseconds before
// each compute action of the executor, a straggler on demand for the straggler warning's tests
// (docs/reliability.md). Read once; unset, a call costs the check of a cached value. A malformed
// value is a loom::Error naming the variable.
// LOOM_TEST_BUSY_MS=MS0,MS1,... makes world rank r report MS_r milliseconds as its busy time per
// step (the measured one where the list is shorter), so the straggler rule is tested on fixed
// numbers rather than on sleeps. Read at each call (once per step).
#pragma once

#include <optional>

namespace loom::comm {

// Milliseconds this rank sleeps per compute action (0: none).
double test_slow_ms();
// Sleeps test_slow_ms(), if any.
void test_slow_down();
// This rank's busy seconds per step from LOOM_TEST_BUSY_MS, if it gives one.
std::optional<double> test_busy_seconds();

}  // namespace loom::comm
