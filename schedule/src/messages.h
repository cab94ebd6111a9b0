// Which message a send produces and a receive waits for, shared by the validator and simulator.
// A message is named by its direction, micro-batch and the virtual stage that receives it.
#pragma once

#include <tuple>

#include <loom/schedule/schedule.h>

namespace loom::schedule::detail {

struct MessageKey {
  bool gradient = false;
  int microbatch = 0;
  int to_virtual_stage = 0;
  friend auto operator<=>(const MessageKey&, const MessageKey&) = default;
};

// SA from virtual stage j goes to j + 1; SG from j goes to j − 1.
inline MessageKey sent_message(const Schedule& schedule, int stage, const Action& send) {
  const int from = schedule.virtual_stage(stage, send.chunk);
  const bool gradient = send.op == Op::SendGradient;
  return {gradient, send.microbatch, gradient ? from - 1 : from + 1};
}

inline MessageKey received_message(const Schedule& schedule, int stage, const Action& receive) {
  return {receive.op == Op::RecvGradient, receive.microbatch, schedule.virtual_stage(stage, receive.chunk)};
}

// The stage whose send a receive waits for.
inline int sender_stage(const Schedule& schedule, int stage, const Action& receive) {
  const int to = schedule.virtual_stage(stage, receive.chunk);
  const int from = receive.op == Op::RecvGradient ? to + 1 : to - 1;
  return schedule.stage_of(from);
}

}  // namespace loom::schedule::detail
