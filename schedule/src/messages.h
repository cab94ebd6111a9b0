// Which message a send produces and a receive waits for, shared by the validator and simulator.
// A message is named by its direction, micro-batch and the virtual stage that receives it. When the
// two virtual stages of a boundary sit on the same stage (the bottom of a V placement, or chunk
// c → c + 1 with one stage) the "message" is a local hand-over: the executor passes the tensors
// over in memory, the simulator charges no time and no link for it.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

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

// holder[j]: the stage holding virtual stage j (-1 if none), for a valid placement what
// Schedule::stage_of(j) says; stage_of searches the placement, a loop over every action uses this.
inline std::vector<int> holders(const Schedule& schedule) {
  const int total = schedule.virtual_stages();
  std::vector<int> holder(static_cast<std::size_t>(std::max(total, 0)), -1);
  if (schedule.placement.empty()) {
    for (int j = 0; j < total; ++j) holder[static_cast<std::size_t>(j)] = j % schedule.stages;
    return holder;
  }
  for (std::size_t i = 0; i < schedule.placement.size(); ++i) {
    const int j = schedule.placement[i];
    if (j >= 0 && j < total) holder[static_cast<std::size_t>(j)] = static_cast<int>(i) % schedule.stages;
  }
  return holder;
}

// The virtual stage at the other end of a transfer: SA goes to j + 1, RG comes from it; SG goes to
// j − 1, RA comes from it. Outside 0..S·v−1 for transfers the first or last virtual stage must not have.
inline int peer_virtual_stage(const Schedule& schedule, int stage, const Action& transfer) {
  const int j = schedule.virtual_stage(stage, transfer.chunk);
  return transfer.op == Op::SendActivation || transfer.op == Op::RecvGradient ? j + 1 : j - 1;
}

// True when both ends of the transfer are chunks of `stage` (a local hand-over).
inline bool is_local(const std::vector<int>& holder, const Schedule& schedule, int stage, const Action& transfer) {
  const int peer = peer_virtual_stage(schedule, stage, transfer);
  return peer >= 0 && peer < static_cast<int>(holder.size()) && holder[static_cast<std::size_t>(peer)] == stage;
}

}  // namespace loom::schedule::detail
