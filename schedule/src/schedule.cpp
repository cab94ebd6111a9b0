#include <loom/schedule/schedule.h>

#include <algorithm>

namespace loom::schedule {

bool Schedule::asynchronous() const {
  for (const auto& program : programs)
    for (const Action& action : program)
      if (action.version >= 0) return true;
  return false;
}

int Schedule::batches() const {
  int steps = 0;
  if (!programs.empty())
    for (const Action& action : programs.front()) steps += action.op == Op::Step;
  return std::max(steps, 1);  // a program without STEP (a forward-only sketch) is one batch
}

}  // namespace loom::schedule
