// Plan helpers: names of schedule kinds, the strategy string, and structural validation.
#include <loom/planner/plan.h>

#include <set>
#include <sstream>

#include <loom/schedule/text.h>

#include "fail.h"

namespace loom::planner {

const char* to_string(ScheduleKind kind) { return kind == ScheduleKind::GPipe ? "gpipe" : "dapple"; }

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (name == "dapple") return ScheduleKind::Dapple;
  if (name == "gpipe") return ScheduleKind::GPipe;
  detail::fail("unknown schedule '", schedule::excerpt(name), "' (a plan's schedule is dapple or gpipe)");
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
  if (plan.stages.empty()) detail::fail("plan: no stages");
  if (plan.microbatches < 1 || plan.global_batch < 1 || plan.global_batch % plan.microbatches != 0)
    detail::fail("plan: ", plan.microbatches, " micro-batches do not divide the global batch of ", plan.global_batch);
  int next = 0;
  std::set<int> seen;
  for (int s = 0; s < plan.stage_count(); ++s) {
    const StagePlan& stage = plan.stages[s];
    if (stage.first_layer != next || stage.last_layer < stage.first_layer)
      detail::fail("plan: stage ", s, " covers layers ", stage.first_layer, "-", stage.last_layer,
                   " but should start at layer ", next);
    next = stage.last_layer + 1;
    if (stage.devices.empty()) detail::fail("plan: stage ", s, " has no devices");
    if (stage.replicas() > plan.microbatch_size())
      detail::fail("plan: stage ", s, " has ", stage.replicas(), " replicas but a micro-batch has only ",
                   plan.microbatch_size(), " samples");
    for (int d : stage.devices) {
      if (d < 0 || d >= devices) detail::fail("plan: stage ", s, " uses device ", d, " of a ", devices, "-device cluster");
      if (!seen.insert(d).second) detail::fail("plan: device ", d, " is used by two replicas");
    }
  }
  if (next != layers) detail::fail("plan: the stages cover layers 0-", next - 1, " of a ", layers, "-layer model");
}

}  // namespace loom::planner
