// Schedules by name, for the CLI, plan files and the planner.
#include <loom/schedule/generators.h>

#include <loom/core/error.h>

namespace loom::schedule {

Schedule make_schedule(const ScheduleOptions& options) { return make_schedule(parse_schedule_kind(options.kind), options); }

Schedule make_schedule(ScheduleKind kind, const ScheduleOptions& options) {
  LOOM_CHECK(options.stages >= 1, "the number of stages must be at least 1, got ", options.stages);
  LOOM_CHECK(options.microbatches >= 1, "the number of micro-batches must be at least 1, got ", options.microbatches);
  switch (kind) {
    case ScheduleKind::gpipe: return gpipe(options.stages, options.microbatches);
    case ScheduleKind::dapple: return dapple(options.stages, options.microbatches, options.warmup);
    case ScheduleKind::pipedream: return pipedream(options.stages, options.microbatches, options.warmup);
    case ScheduleKind::pipedream_2bw:
      return pipedream_2bw(options.stages, options.microbatches, options.minibatches, options.warmup);
    case ScheduleKind::interleaved: return interleaved(options.stages, options.microbatches, options.chunks);
    case ScheduleKind::zb_h1: return zb_h1(options.stages, options.microbatches);
    case ScheduleKind::zb_h2: return zb_h2(options.stages, options.microbatches);
    case ScheduleKind::zb_v: return zb_v(options.stages, options.microbatches);
    case ScheduleKind::v_half: return v_half(options.stages, options.microbatches);
    case ScheduleKind::v_min: return v_min(options.stages, options.microbatches);
    case ScheduleKind::dualpipev: return dualpipev(options.stages, options.microbatches);
    case ScheduleKind::looped_bfs: return looped_bfs(options.stages, options.microbatches, options.chunks);
    case ScheduleKind::interleaved_zb: return interleaved_zb(options.stages, options.microbatches, options.chunks);
  }
  LOOM_THROW("internal: schedule kind ", static_cast<int>(kind));
}

}  // namespace loom::schedule
