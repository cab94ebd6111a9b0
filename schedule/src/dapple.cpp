// DAPPLE's early-backward synchronous 1F1B (Fan et al., PPoPP 2021) and the 1F1B order it shares
// with PipeDream. Starting backwards early caps the activations a stage holds at K_s instead of M.
#include <loom/schedule/generators.h>

#include <string>

#include <loom/base/error.h>
#include "one_f_one_b.h"

namespace loom::schedule {

namespace detail {

std::vector<Action> one_f_one_b_order(int microbatches, int warmup) {
  std::vector<Action> order;
  for (int m = 0; m < warmup; ++m) order.push_back(forward(m));
  for (int m = 0; m < microbatches; ++m) {
    order.push_back(backward(m));
    if (m + warmup < microbatches) order.push_back(forward(m + warmup));
  }
  return order;
}

}  // namespace detail

std::vector<int> warmup_depths(int stages, int microbatches, const std::vector<int>& warmup) {
  LOOM_CHECK(stages >= 1 && microbatches >= 1, "a schedule needs at least one stage and one micro-batch");
  std::vector<int> depths(stages);
  if (warmup.empty()) {
    for (int s = 0; s < stages; ++s) depths[s] = std::min(stages - s, microbatches);
  } else if (warmup.size() == 1) {
    LOOM_CHECK(warmup[0] >= 1, "warm-up depth K must be at least 1, got ", warmup[0]);
    for (int s = 0; s < stages; ++s) depths[s] = std::min(std::max(warmup[0] - s, 1), microbatches);
  } else {
    LOOM_CHECK(static_cast<int>(warmup.size()) == stages, "warm-up depths: expected 1 or ", stages,
                    " values (one per stage), got ", warmup.size());
    for (int s = 0; s < stages; ++s) {
      LOOM_CHECK(warmup[s] >= 1 && warmup[s] <= microbatches, "warm-up depth of stage ", s, " is ",
                      warmup[s], "; it must be between 1 and the number of micro-batches (", microbatches, ")");
      LOOM_CHECK(s == 0 || warmup[s] <= warmup[s - 1], "warm-up depths must not increase along the pipeline (stage ",
                      s, " has ", warmup[s], " > ", warmup[s - 1], " of stage ", s - 1,
                      "): the later stage would wait for a forward that comes after a backward it feeds");
      depths[s] = warmup[s];
    }
  }
  return depths;
}

Schedule dapple(int stages, int microbatches, const std::vector<int>& warmup) {
  const std::vector<int> depths = warmup_depths(stages, microbatches, warmup);
  Schedule schedule = empty_schedule(ScheduleKind::dapple, stages, microbatches);
  for (int s = 0; s < stages; ++s) {
    schedule.programs.push_back(detail::one_f_one_b_order(microbatches, depths[s]));
    schedule.programs.back().push_back(allreduce());
    schedule.programs.back().push_back(optimizer_step());
  }
  return with_communication(std::move(schedule));
}

}  // namespace loom::schedule
