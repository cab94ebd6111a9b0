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

// One row: the kind's best plan under `recompute`, or why none fits.
void print_row(const planner::Profile& profile, const planner::Cluster& cluster, int global_batch,
               planner::JointOptions options, schedule::ScheduleKind kind, bool recompute) {
  options.kinds = {kind};
  options.recompute = recompute;
  const planner::JointResult r = planner::plan_joint(profile, cluster, global_batch, options);
  const std::string name(schedule::schedule_kind_name(kind));
  const char* choice = recompute ? "searched" : "none";
  if (!r.found) {
    std::printf("%-15s %-10s %11s %5s  none fits%s: %s\n", name.c_str(), choice, "-", "-",
                recompute ? " with any recomputation; without it" : "", r.why_none.c_str());
    return;
  }
  std::string peaks, recomputed;
  for (std::size_t s = 0; s < r.evaluation.stages.size(); ++s) {
    peaks += (peaks.empty() ? "" : " | ") + bytes_text(r.evaluation.stages[s].peak_bytes);
    std::string blocks;
    if (!r.partition.recompute.empty())
      for (int l : r.partition.recompute[s]) blocks += (blocks.empty() ? "" : ",") + std::to_string(l);
    recomputed += (s ? " | " : "") + (blocks.empty() ? std::string("-") : blocks);
  }
  std::printf("%-15s %-10s %11.3f %5d  %-40s %s  recomputed %s%s\n", name.c_str(), choice, r.evaluation.simulation.step_ms,
              r.partition.microbatches, cuts(r.partition).c_str(), peaks.c_str(), recomputed.c_str(),
              r.search == "exact" ? "" : "  (time-limited)");
}

}  // namespace

void print_explanation(const planner::Profile& profile, const planner::Cluster& cluster, int global_batch,
                       const planner::JointOptions& options) {
  std::printf("\nper schedule kind and recomputation (none, or searched per stage where a plan does not fit)\n");
  std::printf("%-15s %-10s %11s %5s  %-40s %s\n", "schedule", "recompute", "step ms", "M", "virtual stages x replicas",
              "peak per stage");
  for (const schedule::ScheduleKind kind : options.kinds.empty() ? planner::joint_kinds() : options.kinds)
    for (const bool recompute : {false, true}) print_row(profile, cluster, global_batch, options, kind, recompute);
}

}  // namespace loom::apps
