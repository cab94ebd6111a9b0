// Test-only hook: LOOM_TEST_SLOW_RANK=RANK:MS makes world rank RANK sleep MS milliseconds before
// each compute action of the executor, a straggler on demand for the straggler warning's tests
// (docs/reliability.md). Read once; unset, a call costs the check of a cached value. A malformed
// value is a loom::Error naming the variable.
#pragma once

namespace loom::comm {

// Milliseconds this rank sleeps per compute action (0: none).
double test_slow_ms();
// Sleeps test_slow_ms(), if any.
void test_slow_down();

}  // namespace loom::comm
