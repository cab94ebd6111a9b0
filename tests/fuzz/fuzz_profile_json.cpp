// Profile JSON (`loom plan --profile P.json`): the text parser read_profile_json calls.
#include <loom/planner/profile_json.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::planner::Profile profile =
        loom::planner::parse_profile_json(loom::fuzz::as_string(data, size), "fuzz.json");
    (void)loom::planner::profile_to_json(profile).dump();
  });
  return 0;
}
