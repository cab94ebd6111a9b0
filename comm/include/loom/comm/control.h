// Small host-side control collectives over a communicator's MPI side: the numbers a training run
// agrees on besides gradients (memory peaks, failure flags) and text gathered to one rank (traces).
// Collective over the group's members, blocking, under the watchdog like every loom wait.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <loom/comm/communicator.h>

namespace loom::comm {

// Element-wise maximum over the members.
std::vector<std::int64_t> max_over(Communicator& group, std::vector<std::int64_t> values);

// True on every member when any member passes true (every rank learns that one failed).
bool any_member(Communicator& group, bool here);

// Every member learns the message of the lowest-ranked member that passes one (a failure), or
// nothing when none does: a job then reports one cause, whichever rank prints first.
std::optional<std::string> first_failure(Communicator& group, const std::optional<std::string>& failure);

// Member `root` gets every member's text in member order; the others get an empty list.
std::vector<std::string> gather_text(Communicator& group, const std::string& text, int root = 0);

}  // namespace loom::comm
