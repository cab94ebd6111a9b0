// loom's test-only hooks, read from environment variables for the fault, elastic and straggler
// tests (docs/reliability.md). Internal: comm and the runtime call them; this folder is not
// installed. Every variable is read once, at check_test_hooks() or the first call (LOOM_TEST_BUSY_MS
// at each call); unset, a hook costs the check of a cached value. A malformed value is a
// loom::Error naming the variable.
//
// LOOM_TEST_PAUSE_AT=PHASE:RANK[:N]: world rank RANK stops the N-th time (default 1) it reaches
// PHASE, printing "loom: test hook: rank R pid P paused at PHASE N (LOOM_TEST_PAUSE_AT)" on stderr
// and sleeping for good, so that a fault test can kill or stop it at a known point of training:
//   warmup     before the first forward of a training step (every schedule starts a step there)
//   steady     before the first forward that follows a backward in a step (1F1B's steady phase;
//              a stage whose warm-up forwards are all of its micro-batches never reaches it)
//   allreduce  a gradient bucket packed, before this rank joins its allreduce, which its replicas
//              have entered (in the bucketer's progress thread)
// Each point is reached once per training step (allreduce: once per bucket, and a small model has
// one), so N counts the steps of this run.
// LOOM_TEST_PAUSE_AFTER_MPI_INIT=RANK: that rank says so on stderr and sleeps right after
// MPI_Init_thread, so that a fault test can stop it at start-up.
// LOOM_TEST_SLOW_RANK=RANK:MS: world rank RANK sleeps MS milliseconds before each compute action
// of the executor, a straggler on demand.
// LOOM_TEST_BUSY_MS=MS0,MS1,...: world rank r reports MS_r milliseconds as its busy time per step
// (the measured one where the list is shorter), so the straggler rule is tested on fixed numbers.
#pragma once

#include <optional>

namespace loom::comm {

enum class PausePhase { warmup, steady, allreduce };

// Reads every hook's variable now: a malformed value fails every rank at start-up, together,
// rather than the first rank to reach a hook while the others wait for it.
void check_test_hooks();

void test_pause_at(PausePhase phase);
void test_pause_after_mpi_init(int rank);

// Milliseconds this rank sleeps per compute action (0: none), and the sleep itself.
double test_slow_ms();
void test_slow_down();
// This rank's busy seconds per step from LOOM_TEST_BUSY_MS, if it gives one.
std::optional<double> test_busy_seconds();

}  // namespace loom::comm
