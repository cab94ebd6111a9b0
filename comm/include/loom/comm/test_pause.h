// Test-only hook (docs/reliability.md, section 1-3): LOOM_TEST_PAUSE_AT=PHASE:RANK[:N] makes world
// rank RANK stop the N-th time (default 1) it reaches PHASE: it prints
//   loom: test hook: rank R pid P paused at PHASE N (LOOM_TEST_PAUSE_AT)
// on stderr and sleeps for good, so that a fault test can kill or stop it at a known point of
// training. The points, where the runtime calls test_pause_at():
//   warmup     before the first forward of a training step (every schedule starts a step there)
//   steady     before the first forward that follows a backward in a step (1F1B's steady phase;
//              a stage whose warm-up forwards are all of its micro-batches never reaches it)
//   allreduce  a gradient bucket packed, before this rank joins its allreduce, which its replicas
//              have entered (in the bucketer's progress thread)
// Each point is reached once per training step (allreduce: once per bucket, and a small model has
// one), so N counts the steps of this run. The variable is read once; unset, a call costs the
// check of a cached flag. A malformed value is a loom::Error naming the variable.
#pragma once

namespace loom::comm {

enum class PausePhase { warmup, steady, allreduce };

void test_pause_at(PausePhase phase);
// Reads every test hook's variable now (LOOM_TEST_PAUSE_AT, and test_slow.h's LOOM_TEST_SLOW_RANK
// and LOOM_TEST_BUSY_MS): a malformed value fails every rank at start-up, together, rather than
// the first rank to reach a hook while the others wait for it.
void check_test_hooks();

}  // namespace loom::comm
