// Schedules by name, for the CLI, plan files and the planner.
#include <loom/schedule/generators.h>

#include "fail.h"

namespace loom::schedule {

const std::vector<std::string>& schedule_kinds() {
  static const std::vector<std::string> kinds = {"gpipe", "dapple", "pipedream", "pipedream-2bw", "interleaved", "zb-h1"};
  return kinds;
}

Schedule make_schedule(const ScheduleOptions& options) {
  detail::require(options.stages >= 1, "the number of stages must be at least 1, got ", options.stages);
  detail::require(options.microbatches >= 1, "the number of micro-batches must be at least 1, got ", options.microbatches);
  const std::string& kind = options.kind;
  if (kind == "gpipe") return gpipe(options.stages, options.microbatches);
  if (kind == "dapple") return dapple(options.stages, options.microbatches, options.warmup);
  if (kind == "pipedream") return pipedream(options.stages, options.microbatches, options.warmup);
  if (kind == "pipedream-2bw")
    return pipedream_2bw(options.stages, options.microbatches, options.minibatches, options.warmup);
  if (kind == "interleaved") return interleaved(options.stages, options.microbatches, options.chunks);
  if (kind == "zb-h1") return zb_h1(options.stages, options.microbatches);
  std::string known;
  for (const std::string& name : schedule_kinds()) known += (known.empty() ? "" : ", ") + name;
  detail::fail("unknown schedule '", kind, "' (known: ", known, ")");
}

}  // namespace loom::schedule
