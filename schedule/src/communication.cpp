// Boundary transfers around compute. A receive sits right before the compute that needs it: that
// is where the executor waits (it posted the receive long before). A send sits right after the
// compute that produced its data, so the transfer overlaps whatever the rank does next. First and
// last are virtual stages under the schedule's placement; a boundary between two chunks of one
// stage (the bottom of a V) gets its SA/RA and SG/RG too: the executor hands those tensors over in
// memory, and since the producing compute comes first in the program, so does the send.
#include <loom/schedule/generators.h>

#include <utility>

namespace loom::schedule {

Schedule with_communication(Schedule schedule) {
  for (int s = 0; s < static_cast<int>(schedule.programs.size()); ++s) {
    std::vector<Action> program;
    for (const Action& action : schedule.programs[s]) {
      const bool first = schedule.is_first(s, action.chunk);
      const bool last = schedule.is_last(s, action.chunk);
      const Action transfer{Op::Forward, action.microbatch, action.chunk, -1};
      auto with_op = [&](Op op) { Action a = transfer; a.op = op; return a; };
      if (action.op == Op::Forward && !first) program.push_back(with_op(Op::RecvActivation));
      if (starts_backward(action.op) && !last) program.push_back(with_op(Op::RecvGradient));
      program.push_back(action);
      if (action.op == Op::Forward && !last) program.push_back(with_op(Op::SendActivation));
      if (starts_backward(action.op) && !first) program.push_back(with_op(Op::SendGradient));
    }
    schedule.programs[s] = std::move(program);
  }
  return schedule;
}

}  // namespace loom::schedule
