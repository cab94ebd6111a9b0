// The schedules loom knows, as generators of per-stage programs. Each returns a complete program
// (compute, communication, AR, STEP) that passes validate(); docs/schedules.md shows each for
// S = 4, M = 8 and explains the choices.
#pragma once

#include <string>
#include <vector>

#include <loom/schedule/schedule.h>
#include <loom/schedule/schedule_kind.h>

namespace loom::schedule {

// GPipe: all M forwards, then all M backwards (in micro-batch order), AR, STEP.
Schedule gpipe(int stages, int microbatches);

// Warm-up depth K_s of stage s for 1F1B schedules. Empty: DAPPLE's K_s = min(S − s, M).
// One value K: the first stage's depth, K_s = min(max(K − s, 1), M). S values: K_s as given
// (each in [1, M], non-increasing along the pipeline, or the schedule would deadlock).
std::vector<int> warmup_depths(int stages, int microbatches, const std::vector<int>& warmup = {});

// DAPPLE early-backward synchronous 1F1B: K_s forwards, then one backward and one forward
// alternately, then the remaining backwards; AR after the last backward, one STEP.
Schedule dapple(int stages, int microbatches, const std::vector<int>& warmup = {});

// PipeDream asynchronous 1F1B with weight stashing over a window of `minibatches` minibatches
// (each a single micro-batch): the 1F1B order of dapple() with no flush; every backward is followed
// by AR and STEP, every F/B carries the weight version it uses (the number of STEPs the stage had
// done before the forward; the backward reuses it).
Schedule pipedream(int stages, int minibatches, const std::vector<int>& warmup = {});

// PipeDream-2BW: the same 1F1B order over `minibatches` × `microbatches` micro-batches, gradients
// accumulated over the micro-batches of a minibatch, one AR + STEP per minibatch at each stage.
// Minibatch n runs with version max(n − 1, 0) on every stage, so at most two versions are alive
// and W(n+1) = W(n) − η∇f(W(n−1)). Needs microbatches ≥ stages (the paper's m ≥ d).
Schedule pipedream_2bw(int stages, int microbatches, int minibatches, const std::vector<int>& warmup = {});

// Interleaved 1F1B (Megatron-LM) with `chunks` virtual stages per rank. Micro-batches go through
// the chunks in groups of S, so microbatches must be a multiple of stages.
Schedule interleaved(int stages, int microbatches, int chunks);

// ZB-H1 (Qi et al., zero bubble): backward split into BI and BW; stage s runs the 1F1B order with
// BI in place of B and defers its first s weight-gradient passes, so BW fills the cool-down. A
// stage never holds more than S micro-batches (1F1B's peak on stage 0).
Schedule zb_h1(int stages, int microbatches);

// ZB-H2 (Qi et al.): zero bubble inside the step at (2S − 1)/S of 1F1B's stage-0 activation memory.
// Stage s runs F(x), BI(x − 2(S − 1 − s)), BW(x − L) for x = 0, 1, ... (L = min(2(S − 1), M)), so
// 2(S − s) − 1 forwards come before its first BI and the deferred BWs fill the tail; every stage
// holds min(M, 2S − 1) micro-batches at most. Any M ≥ 1. With loom's synchronous STEP the staggered
// start and end remain (no optimizer post-validation): see zb_h2.cpp and docs/schedules.md.
Schedule zb_h2(int stages, int microbatches);

// V-shaped schedules on 2 chunks per stage (v_placement): ZB-V (zero bubble at 1F1B's memory),
// V-Half and V-Min ("Pipeline parallelism with controllable memory": 1/2 and 1/3 of 1F1B's
// activation memory). See v_shape.cpp.
Schedule zb_v(int stages, int microbatches);
Schedule v_half(int stages, int microbatches);
Schedule v_min(int stages, int microbatches);

// DualPipeV (DeepSeek's DualPipe on a V, PyTorch's ScheduleDualPipeV): V placement, a zero-bubble
// warm-up, a steady state of overlapped pairs (F of one chunk with B of the other, overlap.h) and a
// split-backward drain. Any M ≥ 1 (PyTorch needs M ≥ 2S). See dualpipev.cpp.
Schedule dualpipev(int stages, int microbatches);

// Looped BFS (PyTorch's ScheduleLoopedBFS): looped placement (chunk c of stage s = virtual stage
// c·S + s); each rank runs the forwards of all micro-batches on chunk 0, then chunk 1, ... (breadth
// first), then the backwards chunk by chunk in reverse, micro-batches last first. Any M ≥ 1; every
// stage holds all v·M chunks at the turn. See looped_bfs.cpp.
Schedule looped_bfs(int stages, int microbatches, int chunks);

// Interleaved zero bubble (PyTorch's ScheduleInterleavedZeroBubble): interleaved 1F1B with the
// backward split into BI and BW, stage s running each BW s steps after its BI so BWs fill the
// drain. Micro-batches go through the chunks in rounds of R = M / max(1, ⌊M / S⌋) (PyTorch's rule),
// so M < S works and M ≥ S must be a multiple of ⌊M / S⌋ (any M for one chunk, where this is
// zb_h1). See
// interleaved_zb.cpp.
Schedule interleaved_zb(int stages, int microbatches, int chunks);

// The programs above are generated from compute order; this inserts, around every F and B/BI, the
// receive just before it and the send just after it. Exposed for hand-built schedules.
Schedule with_communication(Schedule compute_only);

struct ScheduleOptions {
  std::string kind;             // a name of schedule_kind.h
  int stages = 1;
  int microbatches = 1;
  int chunks = 2;               // interleaved only
  int minibatches = 3;          // pipedream-2bw only: minibatches in the simulated window
  std::vector<int> warmup;      // dapple / pipedream / pipedream-2bw: see warmup_depths()
};

// Dispatch by kind name; unknown kinds and bad sizes get a one-line loom::Error.
Schedule make_schedule(const ScheduleOptions& options);
// The same for a kind already parsed (options.kind is not read).
Schedule make_schedule(ScheduleKind kind, const ScheduleOptions& options);


}  // namespace loom::schedule
