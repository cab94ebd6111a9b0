// `loom plan --cluster SPEC`: the spec parser parse_cluster calls for anything that is not a file
// ("2x8", "4x8,intra=130GB/s,inter=25Gb/s,memory=16GiB,latency=0.01ms", presets "A".."C").
#include <loom/planner/cluster.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::planner::Cluster cluster = loom::planner::parse_cluster_spec(loom::fuzz::as_string(data, size));
    (void)loom::planner::describe(cluster);
  });
  return 0;
}
