// check_schedule_sizes (see schedule_sizes.h).
#include "schedule_sizes.h"

#include <loom/base/error.h>
#include <loom/schedule/validator.h>

namespace loom::apps {

void check_schedule_sizes(const schedule::ScheduleOptions& o) {
  auto within = [](const char* flag, int value, int most) {
    LOOM_CHECK(value >= 1 && value <= most, "--", flag, " must be in [1, ", most, "], got ", value);
  };
  within("stages", o.stages, schedule::kMaxStages);
  within("microbatches", o.microbatches, schedule::kMaxMicrobatches);
  within("chunks", o.chunks, schedule::kMaxChunks);
  within("minibatches", o.minibatches, schedule::kMaxMicrobatches);
  const schedule::ScheduleKind kind = schedule::parse_schedule_kind(o.kind, "--schedule");
  const bool two_bw = kind == schedule::ScheduleKind::pipedream_2bw, multi_chunk = schedule::is_multi_chunk(kind);
  const long long microbatches = static_cast<long long>(o.microbatches) * (two_bw ? o.minibatches : 1);
  LOOM_CHECK(microbatches <= schedule::kMaxMicrobatches, "--microbatches x --minibatches must be at most ",
             schedule::kMaxMicrobatches, ", got ", microbatches);
  schedule::check_size(o.stages, static_cast<int>(microbatches), multi_chunk ? o.chunks : 1,
                       multi_chunk ? "--stages x --microbatches x --chunks" : "--stages x --microbatches");
}

}  // namespace loom::apps
