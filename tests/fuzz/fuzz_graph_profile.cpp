// PipeDream/DAPPLE graph.txt profiles (`loom plan --profile graph.txt`): the stream parser that
// read_graph_profile calls, with the micro-batch taken from the file name as the CLI does.
#include <sstream>

#include <loom/planner/graph_profile.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  loom::fuzz::rejecting_loom_errors([&] {
    std::istringstream in(loom::fuzz::as_string(data, size));
    (void)loom::planner::parse_graph_profile(in, "fuzz-pbs-4.txt");
  });
  return 0;
}
