// `loom plan --explain` (see plan_explain.h).
#include "plan_explain.h"

#include <cstdio>
#include <string>

#include <loom/core/bytes_text.h>
#include <loom/schedule/schedule_kind.h>

namespace loom::apps {

namespace {

std::string joined(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

// The kind's best plan: without recomputation, or searched per stage where nothing fits without.
nlohmann::json kind_row(const planner::Profile& profile, const planner::Cluster& cluster, int global_batch,
                        planner::JointOptions options, schedule::ScheduleKind kind, double chosen_ms) {
  options.kinds = {kind};
  options.seed = false;
  options.seed_plans.clear();
  options.recompute = false;
  planner::JointResult r = planner::plan_joint(profile, cluster, global_batch, options);
  if (!r.found) {
    options.recompute = true;
    r = planner::plan_joint(profile, cluster, global_batch, options);
  }
  nlohmann::json row = {{"schedule", schedule::schedule_kind_name(kind)}, {"found", r.found}, {"search", r.search}};
  if (!r.found) {
    row["why"] = "does not fit, with any recomputation (" + r.why_none + ")";
    return row;
  }
  const planner::Partition& p = r.partition;
  nlohmann::json cuts = nlohmann::json::array(), stages = nlohmann::json::array();
  for (const auto& [first, last] : p.layers) cuts.push_back({first, last});
  for (std::size_t s = 0; s < r.evaluation.stages.size(); ++s)
    stages.push_back({{"replicas", p.replicas[s]},
                      {"predicted_peak_bytes", r.evaluation.stages[s].peak_bytes},
                      {"recompute", p.recompute.empty() ? std::vector<int>{} : p.recompute[s]}});
  const double step = r.evaluation.simulation.step_ms;
  row.update({{"predicted_step_ms", step}, {"microbatches", p.microbatches}, {"virtual_stages", cuts},
              {"stages", stages}, {"zero", p.zero ? 1 : 0}});
  char why[64];
  std::snprintf(why, sizeof why, "%.2f%% slower", 100 * (step / chosen_ms - 1));
  row["why"] = step <= chosen_ms * (1 + 1e-9) ? "as fast as the chosen plan" : why;
  return row;
}

}  // namespace

nlohmann::json explain_kinds(const planner::Profile& profile, const planner::Cluster& cluster, int global_batch,
                             const planner::JointOptions& options, double chosen_ms) {
  nlohmann::json rows = nlohmann::json::array();
  for (const schedule::ScheduleKind kind : options.kinds.empty() ? planner::joint_kinds() : options.kinds)
    rows.push_back(kind_row(profile, cluster, global_batch, options, kind, chosen_ms));
  return rows;
}

void print_explanation(const nlohmann::json& rows) {
  std::printf("\neach schedule kind's best plan (recomputation only where nothing fits without it), against the "
              "chosen one\n");
  std::printf("%-15s %11s %5s  %-28s %-24s %-12s %-6s %s\n", "schedule", "step ms", "M", "virtual stages x replicas",
              "peak per stage", "recomputed", "ZeRO-1", "why not chosen");
  for (const nlohmann::json& row : rows) {
    const std::string name = row["schedule"];
    if (!row["found"].get<bool>()) {
      std::printf("%-15s %11s %5s  %s\n", name.c_str(), "-", "-", row["why"].get<std::string>().c_str());
      continue;
    }
    std::string cuts, replicas, peaks, recomputed;
    for (const nlohmann::json& c : row["virtual_stages"])
      cuts += (cuts.empty() ? "" : ",") + std::to_string(c[0].get<int>()) + "-" + std::to_string(c[1].get<int>());
    for (const nlohmann::json& s : row["stages"]) {
      replicas += (replicas.empty() ? "" : ",") + std::to_string(s["replicas"].get<int>());
      peaks += (peaks.empty() ? "" : " | ") + bytes_text(s["predicted_peak_bytes"].get<double>());
      const std::string blocks = joined(s["recompute"].get<std::vector<int>>());
      recomputed += (recomputed.empty() ? "" : "|") + (blocks.empty() ? std::string("-") : blocks);
    }
    std::printf("%-15s %11.3f %5d  %-28s %-24s %-12s %-6s %s%s\n", name.c_str(), row["predicted_step_ms"].get<double>(),
                row["microbatches"].get<int>(), (cuts + " x " + replicas).c_str(), peaks.c_str(), recomputed.c_str(),
                row["zero"].get<int>() ? "yes" : "-", row["why"].get<std::string>().c_str(),
                row["search"] == "exact" ? "" : " (time-limited)");
  }
}

}  // namespace loom::apps
