#include <loom/schedule/schedule.h>

namespace loom::schedule {

bool Schedule::asynchronous() const {
  for (const auto& program : programs)
    for (const Action& action : program)
      if (action.version >= 0) return true;
  return false;
}

}  // namespace loom::schedule
