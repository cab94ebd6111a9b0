// Plan helpers: the schedules a plan may name, the strategy string, and structural validation.
#include <loom/planner/plan.h>

#include <set>
#include <sstream>

#include <loom/schedule/text.h>

#include <loom/core/error.h>

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

std::string Plan::strategy() const {
  std::ostringstream out;
  for (const StagePlan& s : stages) {
    if (&s != &stages.front()) out << " | ";
    out << "[" << s.first_layer << "-" << s.last_layer << "]x" << s.replicas();
  }
  return out.str();
}

void validate(const Plan& plan, int layers, int devices) {
  if (plan.stages.empty()) LOOM_THROW("plan: no stages");
  if (plan.microbatches < 1 || plan.global_batch < 1 || plan.global_batch % plan.microbatches != 0)
    LOOM_THROW("plan: ", plan.microbatches, " micro-batches do not divide the global batch of ", plan.global_batch);
  int next = 0;
  std::set<int> seen;
  for (int s = 0; s < plan.stage_count(); ++s) {
    const StagePlan& stage = plan.stages[s];
    if (stage.first_layer != next || stage.last_layer < stage.first_layer)
      LOOM_THROW("plan: stage ", s, " covers layers ", stage.first_layer, "-", stage.last_layer,
                   " but should start at layer ", next);
    next = stage.last_layer + 1;
    if (stage.devices.empty()) LOOM_THROW("plan: stage ", s, " has no devices");
    if (stage.replicas() > plan.microbatch_size())
      LOOM_THROW("plan: stage ", s, " has ", stage.replicas(), " replicas but a micro-batch has only ",
                   plan.microbatch_size(), " samples");
    for (int d : stage.devices) {
      if (d < 0 || d >= devices) LOOM_THROW("plan: stage ", s, " uses device ", d, " of a ", devices, "-device cluster");
      if (!seen.insert(d).second) LOOM_THROW("plan: device ", d, " is used by two replicas");
    }
  }
  if (next != layers) LOOM_THROW("plan: the stages cover layers 0-", next - 1, " of a ", layers, "-layer model");
}

}  // namespace loom::planner
