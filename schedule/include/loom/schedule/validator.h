// Checks that a schedule can run and computes what it costs in memory, without running it.
//
// Rules (docs/schedules.md, "Semantics"): every (micro-batch, chunk) has exactly one F and either
// one B or one BI followed by one BW on its stage; B/BI after F; every boundary needs exactly one
// matching send (after the producing compute) and receive (before the consuming compute), and a
// boundary between two chunks of one stage (a local hand-over) has its send before its receive; under
// the executor's semantics — blocking compute, non-blocking sends, receives waited in program
// order — no rank waits forever; synchronous schedules end with AR then STEP after all compute;
// asynchronous ones use a weight version no newer than the stage's STEPs so far and run each
// backward with its forward's version.
#pragma once

#include <string>
#include <vector>

#include <loom/schedule/schedule.h>

namespace loom::schedule {

struct StageMemory {
  int peak_inflight = 0;         // (micro-batch, chunk) pairs whose F is done and B/BW is not
  int peak_weight_versions = 1;  // distinct versions needed at once (current + stashed)
};

struct ValidationReport {
  std::vector<std::string> errors;  // empty when valid; each says what and where
  std::vector<StageMemory> stages;
  bool ok() const { return errors.empty(); }
};

// The sizes a schedule may have. Text files, generator options and the planner's candidates are
// checked against them before anything is sized by them (a 37-byte file must not ask for 10^8
// micro-batches); S·M·v bounds the actions (about six per cell) that the validator, the simulator
// and a trace hold at once, and with it their time.
constexpr int kMaxStages = 1024;
constexpr int kMaxMicrobatches = 65536;
constexpr int kMaxChunks = 64;
constexpr long long kMaxScheduleCells = 1 << 19;

// Throws loom::Error, prefixed by `source` ("plan.txt", "--stages"), when S, M or v or their product
// lies outside those ranges.
void check_size(int stages, int microbatches, int chunks, const std::string& source);

// The placement (schedule.h) is empty (the looped c·S + s) or gives each of the S·v (chunk, stage)
// pairs its own virtual stage in 0..S·v−1: a permutation, so every stage holds v of them. Throws
// loom::Error naming the first bad entry, prefixed by `source` when given.
void check_placement(const Schedule& schedule, const std::string& source = "");

// Reports sizes outside check_size()'s ranges as its first error, without looking further; a bad
// placement likewise.
ValidationReport validate(const Schedule& schedule);

// validate() and throw loom::Error with the first errors when it fails, prefixed by `source` (the
// file the schedule was read from) when given.
void check(const Schedule& schedule, const std::string& source = "");

// In-flight activations and weight versions of one program, in program order.
StageMemory stage_memory(const std::vector<Action>& program);

}  // namespace loom::schedule
