// DualPipeV's overlapped pair (schedule/overlap.h): a forward of one chunk and a full backward of
// another, run by the executor as one action.
//
// The group is the pair with the receives right before it and the sends right after it. Neither
// half waits for the other's input: whichever half has its input runs, a block at a time (the
// forward first when both have, since its output feeds the next stage's forward), and the executor
// switches to the forward as soon as its input lands. Between blocks it progresses the links, so
// the other half's receive (and the earlier sends) move while this half computes; each half's
// output is sent as soon as that half ends, while the other half still computes. The trace shows
// each half's runs of blocks as slices (overlapped: true), each receive as the wait from the
// group's start to its arrival and each send when it left.
//
// On the CPU the two halves share the rank's math threads: what overlaps is communication with
// computation (a transfer progresses while the other half computes), never the two halves' compute
// with each other (on a GPU the same order serves, with the transfers on the communication stream).
#include <chrono>
#include <optional>
#include <thread>

#include <loom/comm/detail/test_hooks.h>
#include <loom/comm/watchdog.h>
#include <loom/core/timer.h>
#include <loom/runtime/executor.h>

#include "executor_state.h"

namespace loom::runtime {

struct Executor::OverlapHalf {
  std::size_t index = 0;                 // its compute action
  std::optional<std::size_t> receive;    // its receive in the group, if any
  std::optional<std::size_t> send;       // its send in the group, if any
  ChunkState* chunk = nullptr;
  MicrobatchState* state = nullptr;
  bool forward = true;
  bool ready = false, done = false;
  std::optional<StageRunner::Pass> pass;
};

void Executor::emit(const Action& action, double start_us, double end_us) {
  if (observer_) observer_({action, stage_, start_us, end_us});
}

bool Executor::poll_input(OverlapHalf& half, double since_us) {
  if (half.ready) return true;
  const Action& receive = schedule_.programs.at(stage_)[*half.receive];
  const bool local = half.forward ? half.chunk->previous_local >= 0 : half.chunk->next_local >= 0;
  comm::PendingReceive& pending = half.forward ? half.state->activation_receive : half.state->gradient_receive;
  if (!local) {
    if (!pending.test()) return false;
    (half.forward ? half.state->inputs : half.state->grad_outputs) = received(pending);
  }
  half.ready = true;  // a local hand-over's tensors were moved in by its send, earlier in the program
  emit(receive, since_us, now_us());
  return true;
}

// Neither half has its input: polls both (a blocking wait on one would miss the other arriving
// first), under the watchdog like every other wait.
void Executor::wait_for_an_input(OverlapHalf* halves, double since_us) {
  const comm::WatchdogScope watchdog("overlapped pair: waiting for the input of either half");
  const double start = now_us();
  while (!poll_input(halves[0], since_us) && !poll_input(halves[1], since_us)) {
    progress_links();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  waited_us_ += now_us() - start;
}

void Executor::run_overlap_group(const schedule::OverlapGroup& group, std::int64_t first_step,
                                 const BatchReader& reader) {
  const auto& program = schedule_.programs.at(stage_);
  const double since = now_us();
  OverlapHalf halves[2];
  halves[0].receive = group.forward_receive;
  halves[0].send = group.forward_send;
  halves[1].receive = group.backward_receive;
  halves[1].send = group.backward_send;
  for (int h = 0; h < 2; ++h) {
    OverlapHalf& half = halves[h];
    half.index = group.forward + static_cast<std::size_t>(h);
    half.forward = h == 0;
    const Action& a = program[half.index];
    half.chunk = chunks_.at(static_cast<std::size_t>(a.chunk)).get();
    half.state = &half.chunk->microbatches.at(a.microbatch);
    half.ready = !half.receive.has_value();
  }
  int current = -1;  // the half whose blocks run now, and since when
  double segment_start = 0;
  auto end_segment = [&] {
    if (current >= 0) emit(program[halves[current].index], segment_start, now_us());
    current = -1;
  };
  while (!halves[0].done || !halves[1].done) {
    progress_links();
    for (OverlapHalf& half : halves)
      if (!half.done) poll_input(half, since);
    const int pick = halves[0].ready && !halves[0].done ? 0 : halves[1].ready && !halves[1].done ? 1 : -1;
    if (pick < 0) {
      end_segment();
      wait_for_an_input(halves, since);
      continue;
    }
    if (pick != current) {
      end_segment();
      current = pick;
      segment_start = now_us();
    }
    OverlapHalf& half = halves[pick];
    const Action& a = program[half.index];
    if (!half.pass) {
      comm::test_slow_down();
      half.pass = half.forward ? begin_forward(*half.chunk, a.microbatch, reader)
                               : begin_backward(*half.chunk, a.microbatch, final_backward_[half.index] != 0);
    }
    half.chunk->runner->step(*half.pass);
    if (!half.pass->done()) continue;
    half.forward ? end_forward(*half.chunk, *half.pass, first_step) : end_backward(*half.chunk, *half.pass);
    half.done = true;
    end_segment();
    if (half.send) {
      const double start = now_us();
      send(*half.chunk, program[*half.send]);
      emit(program[*half.send], start, now_us());
    }
  }
}

}  // namespace loom::runtime
