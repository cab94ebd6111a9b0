// `loom plan --cluster FILE.json`: read_cluster_json on a file holding the input.
#include <loom/planner/cluster.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = loom::fuzz::write_scratch_file("cluster.json", loom::fuzz::as_string(data, size));
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::planner::Cluster cluster = loom::planner::read_cluster_json(path);
    (void)loom::planner::describe(cluster);
  });
  return 0;
}
