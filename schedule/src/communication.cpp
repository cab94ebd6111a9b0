// Boundary transfers around compute. A receive sits right before the compute that needs it: that
// is where the executor waits (it posted the receive long before). A send sits right after the
// compute that produced its data, so the transfer overlaps whatever the rank does next. First and
// last are virtual stages under the schedule's placement; a boundary between two chunks of one
// stage (the bottom of a V) gets its SA/RA and SG/RG too: the executor hands those tensors over in
// memory, and since the producing compute comes first in the program, so does the send. An
// overlapped pair (DualPipeV, overlap.h) gets both halves' receives before it and both sends after.
#include <loom/schedule/generators.h>

#include <utility>

namespace loom::schedule {

Schedule with_communication(Schedule schedule) {
  for (int s = 0; s < static_cast<int>(schedule.programs.size()); ++s) {
    const auto& compute = schedule.programs[s];
    std::vector<Action> program;
    auto transfer = [&](const Action& action, Op op) {
      const bool first = schedule.is_first(s, action.chunk);
      const bool last = schedule.is_last(s, action.chunk);
      const bool needed = (op == Op::RecvActivation && action.op == Op::Forward && !first) ||
                          (op == Op::RecvGradient && starts_backward(action.op) && !last) ||
                          (op == Op::SendActivation && action.op == Op::Forward && !last) ||
                          (op == Op::SendGradient && starts_backward(action.op) && !first);
      if (needed) program.push_back(Action{op, action.microbatch, action.chunk, -1});
    };
    for (std::size_t i = 0; i < compute.size(); ++i) {
      // An overlapped pair (overlap.h): both halves' receives before it, both sends after it.
      const bool pair = compute[i].overlap == Overlap::forward_half && i + 1 < compute.size() &&
                        compute[i + 1].overlap == Overlap::backward_half;
      const std::size_t last = pair ? i + 1 : i;
      for (std::size_t k = i; k <= last; ++k) {
        transfer(compute[k], Op::RecvActivation);
        transfer(compute[k], Op::RecvGradient);
      }
      for (std::size_t k = i; k <= last; ++k) program.push_back(compute[k]);
      for (std::size_t k = i; k <= last; ++k) {
        transfer(compute[k], Op::SendActivation);
        transfer(compute[k], Op::SendGradient);
      }
      i = last;
    }
    schedule.programs[s] = std::move(program);
  }
  return schedule;
}

}  // namespace loom::schedule
