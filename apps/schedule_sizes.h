// The sizes `loom simulate` and `loom schedule export` give a generator, checked by flag name
// before any of them sizes a schedule.
#pragma once

#include <loom/schedule/generators.h>

namespace loom::apps {

void check_schedule_sizes(const schedule::ScheduleOptions& options);

}  // namespace loom::apps
