// `loom simulate --from FILE`: parse_schedule, then what the command does with it: check() (the
// validator) and simulate() under uniform costs.
#include <loom/schedule/simulator.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::schedule::Schedule sched = loom::schedule::parse_schedule(loom::fuzz::as_string(data, size), "fuzz.txt");
    loom::schedule::check(sched, "fuzz.txt");
    (void)loom::schedule::simulate(sched, loom::schedule::uniform_costs(1.0, 2.0));
    (void)loom::schedule::to_text(sched);
  });
  return 0;
}
