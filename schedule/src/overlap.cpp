// Groups of overlapped pairs (overlap.h).
#include <loom/schedule/overlap.h>

#include <algorithm>

namespace loom::schedule {

namespace {
bool same_cell(const Action& a, const Action& b) { return a.microbatch == b.microbatch && a.chunk == b.chunk; }

// The receive `a` is, for the half `half`: RA before an F, RG before a B.
bool feeds(const Action& a, const Action& half) {
  return same_cell(a, half) && ((a.op == Op::RecvActivation && half.op == Op::Forward) ||
                                (a.op == Op::RecvGradient && starts_backward(half.op)));
}

// The send `a` is, of the half `half`: SA after an F, SG after a B.
bool leaves(const Action& a, const Action& half) {
  return same_cell(a, half) && ((a.op == Op::SendActivation && half.op == Op::Forward) ||
                                (a.op == Op::SendGradient && starts_backward(half.op)));
}
}  // namespace

std::vector<OverlapGroup> overlap_groups(const std::vector<Action>& program) {
  std::vector<OverlapGroup> groups;
  for (std::size_t i = 0; i + 1 < program.size(); ++i) {
    if (program[i].overlap != Overlap::forward_half || program[i + 1].overlap != Overlap::backward_half) continue;
    OverlapGroup group;
    group.forward = i;
    const Action& f = program[i];
    const Action& b = program[i + 1];
    group.begin = i;
    while (group.begin > 0) {  // at most one receive per half, right before the pair
      const Action& a = program[group.begin - 1];
      if (feeds(a, f) && !group.forward_receive) group.forward_receive = group.begin - 1;
      else if (feeds(a, b) && !group.backward_receive) group.backward_receive = group.begin - 1;
      else break;
      --group.begin;
    }
    group.end = i + 2;
    while (group.end < program.size()) {
      const Action& a = program[group.end];
      if (leaves(a, f) && !group.forward_send) group.forward_send = group.end;
      else if (leaves(a, b) && !group.backward_send) group.backward_send = group.end;
      else break;
      ++group.end;
    }
    groups.push_back(group);
  }
  return groups;
}

bool has_overlap(const std::vector<Action>& program) {
  return std::any_of(program.begin(), program.end(), [](const Action& a) { return a.overlap != Overlap::none; });
}

}  // namespace loom::schedule
