// `loom simulate --schedule-file FILE.csv`: parse_schedule_file (PyTorch's CSV or loom's text, told by
// content; validated), then what the command does with it: check() and simulate() under uniform
// costs, and both writers.
#include <loom/schedule/schedule_file.h>
#include <loom/schedule/simulator.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::schedule::Schedule sched =
        loom::schedule::parse_schedule_file(loom::fuzz::as_string(data, size), "fuzz.csv");
    loom::schedule::check(sched, "fuzz.csv");
    (void)loom::schedule::simulate(sched, loom::schedule::uniform_costs(1.0, 2.0));
    (void)loom::schedule::to_text(sched);
    (void)loom::schedule::to_csv(sched);
  });
  return 0;
}
