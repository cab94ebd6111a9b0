// Plan helpers: the schedules a plan may name, the strategy string, and structural validation.
#include <loom/planner/plan.h>

#include <set>
#include <sstream>

#include <loom/schedule/generators.h>
#include <loom/schedule/text.h>

#include <loom/base/error.h>

namespace loom::planner {

ScheduleKind parse_plan_schedule(std::string_view name) {
  if (name == "dapple") return ScheduleKind::dapple;
  if (name == "gpipe") return ScheduleKind::gpipe;
  LOOM_THROW("unknown schedule '", excerpt(name), "' (a plan's schedule is dapple or gpipe)");
}

int Plan::devices_used() const {
  int total = 0;
  for (const StagePlan& s : stages) total += s.replicas();
  return total;
}

std::vector<LayerRange> StagePlan::chunk_layers() const {
  std::vector<LayerRange> ranges = {{first_layer, last_layer}};
  ranges.insert(ranges.end(), later_chunks.begin(), later_chunks.end());
  return ranges;
}

std::string Plan::strategy() const {
  std::ostringstream out;
  for (const StagePlan& s : stages) {
    if (&s != &stages.front()) out << " | ";
    out << "[";
    for (const auto& [first, last] : s.chunk_layers()) out << (first == s.first_layer ? "" : ",") << first << "-" << last;
    out << "]x" << s.replicas();
  }
  return out.str();
}

schedule::Schedule plan_schedule(const Plan& plan) {
  if (plan.chunks == 1 && plan.schedule == ScheduleKind::gpipe) return schedule::gpipe(plan.stage_count(), plan.microbatches);
  if (plan.chunks == 1 && plan.schedule == ScheduleKind::dapple) return schedule::dapple(plan.stage_count(), plan.microbatches);
  const std::string name(schedule::schedule_kind_name(plan.schedule));
  schedule::Schedule sched;
  try {
    sched = schedule::make_schedule(plan.schedule, {name, plan.stage_count(), plan.microbatches, plan.chunks, 3, {}});
  } catch (const loom::Error& e) {
    LOOM_THROW("plan: schedule ", name, " with ", plan.stage_count(), " stages, ", plan.microbatches,
               " micro-batches and ", plan.chunks, " chunks: ", e.what());
  }
  LOOM_CHECK(sched.chunks == plan.chunks, "plan: schedule ", name, " holds ", sched.chunks,
             " chunk(s) per stage, but the plan has chunks ", plan.chunks);
  return sched;
}

std::vector<LayerRange> virtual_stage_layers(const Plan& plan, const schedule::Schedule& sched) {
  std::vector<LayerRange> ranges(static_cast<std::size_t>(sched.virtual_stages()));
  for (int s = 0; s < plan.stage_count(); ++s) {
    const std::vector<LayerRange> chunks = plan.stages[static_cast<std::size_t>(s)].chunk_layers();
    LOOM_CHECK(static_cast<int>(chunks.size()) == sched.chunks, "plan: stage ", s, " has ", chunks.size(),
               " layer range(s), but the plan has chunks ", sched.chunks);
    for (int c = 0; c < sched.chunks; ++c)
      ranges[static_cast<std::size_t>(sched.virtual_stage(s, c))] = chunks[static_cast<std::size_t>(c)];
  }
  return ranges;
}

namespace {

// The virtual stages cover layers 0 .. layers - 1 in model order.
void check_coverage(const Plan& plan, int layers) {
  const bool one_chunk = plan.chunks == 1;
  // The planners' own kinds take any sizes: no schedule to generate (the cost model validates often).
  const bool any_sizes = one_chunk && (plan.schedule == ScheduleKind::dapple || plan.schedule == ScheduleKind::gpipe);
  int next = 0;
  const std::vector<LayerRange> ranges =
      any_sizes ? virtual_stage_layers(plan, schedule::Schedule{"", plan.stage_count(), 1, 1, {}, {}})
                : virtual_stage_layers(plan, plan_schedule(plan));
  for (std::size_t v = 0; v < ranges.size(); ++v) {
    const auto [first, last] = ranges[v];
    if (first != next || last < first)
      LOOM_THROW("plan: ", one_chunk ? "stage " : "virtual stage ", v, " covers layers ", first, "-", last,
                 " but should start at layer ", next);
    next = last + 1;
  }
  if (next != layers) LOOM_THROW("plan: the stages cover layers 0-", next - 1, " of a ", layers, "-layer model");
}

// A stage's recomputed blocks: ascending, each one of its layers.
void check_recompute(const StagePlan& stage, int s) {
  for (std::size_t i = 0; i < stage.recompute.size(); ++i) {
    const int block = stage.recompute[i];
    if (i > 0 && block <= stage.recompute[i - 1])
      LOOM_THROW("plan: stage ", s, " recompute lists block ", block, " after ", stage.recompute[i - 1],
                 " (ascending, each once)");
    bool held = false;
    for (const auto& [first, last] : stage.chunk_layers()) held = held || (block >= first && block <= last);
    if (!held) LOOM_THROW("plan: stage ", s, " recomputes block ", block, ", which it does not hold");
  }
}

}  // namespace

void validate(const Plan& plan, int layers, int devices) {
  if (plan.stages.empty()) LOOM_THROW("plan: no stages");
  if (plan.microbatches < 1 || plan.global_batch < 1 || plan.global_batch % plan.microbatches != 0)
    LOOM_THROW("plan: ", plan.microbatches, " micro-batches do not divide the global batch of ", plan.global_batch);
  if (plan.chunks < 1) LOOM_THROW("plan: chunks must be at least 1, got ", plan.chunks);
  if (plan.zero != 0 && plan.zero != 1) LOOM_THROW("plan: zero must be 0 or 1, got ", plan.zero);
  check_coverage(plan, layers);
  std::set<int> seen;
  for (int s = 0; s < plan.stage_count(); ++s) {
    const StagePlan& stage = plan.stages[s];
    check_recompute(stage, s);
    if (stage.devices.empty()) LOOM_THROW("plan: stage ", s, " has no devices");
    if (stage.replicas() > plan.microbatch_size())
      LOOM_THROW("plan: stage ", s, " has ", stage.replicas(), " replicas but a micro-batch has only ",
                   plan.microbatch_size(), " samples");
    for (int d : stage.devices) {
      if (d < 0 || d >= devices) LOOM_THROW("plan: stage ", s, " uses device ", d, " of a ", devices, "-device cluster");
      if (!seen.insert(d).second) LOOM_THROW("plan: device ", d, " is used by two replicas");
    }
  }
}

}  // namespace loom::planner
