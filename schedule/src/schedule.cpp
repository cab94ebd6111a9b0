#include <loom/schedule/schedule.h>

#include <algorithm>

#include <loom/base/error.h>

namespace loom::schedule {

bool Schedule::asynchronous() const {
  for (const auto& program : programs)
    for (const Action& action : program)
      if (action.version >= 0) return true;
  return false;
}

int Schedule::stage_of(int virtual_stage) const {
  if (placement.empty()) return virtual_stage % stages;
  const auto at = std::find(placement.begin(), placement.end(), virtual_stage);
  LOOM_CHECK(at != placement.end(), "schedule: virtual stage ", virtual_stage, " is not placed");
  return static_cast<int>(at - placement.begin()) % stages;
}

int Schedule::chunk_of(int virtual_stage) const {
  if (placement.empty()) return virtual_stage / stages;
  const auto at = std::find(placement.begin(), placement.end(), virtual_stage);
  LOOM_CHECK(at != placement.end(), "schedule: virtual stage ", virtual_stage, " is not placed");
  return static_cast<int>(at - placement.begin()) / stages;
}

std::vector<int> v_placement(int stages) {
  std::vector<int> placement(static_cast<std::size_t>(2 * stages));
  for (int s = 0; s < stages; ++s) {
    placement[static_cast<std::size_t>(s)] = s;
    placement[static_cast<std::size_t>(stages + s)] = 2 * stages - 1 - s;
  }
  return placement;
}

int Schedule::batches() const {
  int steps = 0;
  if (!programs.empty())
    for (const Action& action : programs.front()) steps += action.op == Op::Step;
  return std::max(steps, 1);  // a program without STEP (a forward-only sketch) is one batch
}

}  // namespace loom::schedule
