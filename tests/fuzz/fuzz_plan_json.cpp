// Plan JSON (`loom train --plan`, `loom plan` output): parse_plan is what read_plan calls on the
// file's text; a parsed plan is then validated against its own cluster as the planner does.
#include <loom/planner/plan_file.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::planner::Plan plan = loom::planner::parse_plan(loom::fuzz::as_string(data, size), "fuzz.json");
    (void)plan.strategy();
    (void)plan.devices_used();
  });
  return 0;
}
