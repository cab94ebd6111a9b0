// `loom plan --explain` (see plan_explain.h).
#include "plan_explain.h"

#include <cstdio>
#include <string>

#include <loom/core/bytes_text.h>

namespace loom::apps {

namespace {

std::string cuts(const planner::Partition& p) {
  std::string text;
  for (const auto& [first, last] : p.layers) text += (text.empty() ? "" : ",") + std::to_string(first) + "-" + std::to_string(last);
  std::string replicas;
  for (int r : p.replicas) replicas += (replicas.empty() ? "" : ",") + std::to_string(r);
  return text + " x " + replicas;
}

}  // namespace

void print_explanation(const planner::Profile& profile, const planner::Cluster& cluster, int global_batch,
                       const planner::JointOptions& options) {
  std::printf("\nper schedule kind (recomputation: none; the only choice searched so far)\n");
  std::printf("%-15s %11s %5s  %-40s %s\n", "schedule", "step ms", "M", "virtual stages x replicas", "peak per stage");
  for (const schedule::ScheduleKind kind : options.kinds.empty() ? planner::joint_kinds() : options.kinds) {
    planner::JointOptions one = options;
    one.kinds = {kind};
    const planner::JointResult r = planner::plan_joint(profile, cluster, global_batch, one);
    const std::string name(schedule::schedule_kind_name(kind));
    if (!r.found) {
      std::printf("%-15s %11s %5s  none fits: %s\n", name.c_str(), "-", "-", r.why_none.c_str());
      continue;
    }
    std::string peaks;
    for (const planner::StageEvaluation& s : r.evaluation.stages) peaks += (peaks.empty() ? "" : " | ") + bytes_text(s.peak_bytes);
    std::printf("%-15s %11.3f %5d  %-40s %s%s\n", name.c_str(), r.evaluation.simulation.step_ms,
                r.partition.microbatches, cuts(r.partition).c_str(), peaks.c_str(),
                r.search == "exact" ? "" : "  (time-limited)");
  }
}

}  // namespace loom::apps
