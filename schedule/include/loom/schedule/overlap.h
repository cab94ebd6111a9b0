// DualPipeV's overlapped forward + backward pairs in a rank's program.
//
// A pair is an F (Overlap::forward_half) followed at once by a B (Overlap::backward_half) of another
// chunk or micro-batch. with_communication() puts the receives both halves need right before the
// pair and the sends both produce right after it; together they form the pair's group, which the
// executor runs as one action: it starts whichever half has its input (the forward first when both
// have), switches to the forward as soon as its input lands, progresses the links between blocks
// and sends each half's output as soon as that half ends. The simulator times a group the same way;
// the validator and the memory count treat the halves in program order (the forward's activations
// counted before the backward frees its own: the pair's peak whatever order the halves run in).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include <loom/schedule/action.h>

namespace loom::schedule {

struct OverlapGroup {
  std::size_t begin = 0;     // the first receive feeding a half (== forward when none)
  std::size_t forward = 0;   // the F half; the B half is at forward + 1
  std::size_t end = 0;       // one past the last send a half produces (== forward + 2 when none)
  // Within [begin, forward): the receive each half waits for, if it has one in the group.
  std::optional<std::size_t> forward_receive, backward_receive;
  // Within [forward + 2, end): the send each half's output leaves by, if it has one in the group.
  std::optional<std::size_t> forward_send, backward_send;
};

// Every pair of `program` with its group, in program order. Receives and sends that belong to a
// half but are not next to the pair stay outside the group (they run as separate actions).
std::vector<OverlapGroup> overlap_groups(const std::vector<Action>& program);

// True when `program` has an overlapped pair.
bool has_overlap(const std::vector<Action>& program);

}  // namespace loom::schedule
