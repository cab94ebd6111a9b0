// Plan JSON read/write.
#include <loom/planner/plan_file.h>

#include <climits>
#include <fstream>
#include <set>

#include <loom/planner/profile.h>
#include <loom/schedule/validator.h>

#include <loom/core/error.h>
#include "json_input.h"

namespace loom::planner {

namespace {
const char* kFormat = "loom-plan";
}

nlohmann::json plan_to_json(const Plan& plan, const Cluster& cluster) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StagePlan& s : plan.stages) {
    nlohmann::json devices = nlohmann::json::array();
    for (int d : s.devices)
      devices.push_back({{"node", cluster.node_of(d)}, {"device", d % cluster.devices_per_node}});
    stages.push_back({{"layers", {s.first_layer, s.last_layer}},
                      {"replicas", s.replicas()},
                      {"ranks", s.devices},
                      {"devices", devices}});
  }
  nlohmann::json out = {{"format", kFormat},
                        {"version", 1},
                        {"model", plan.model},
                        {"planner", plan.planner},
                        {"global_batch", plan.global_batch},
                        {"microbatches", plan.microbatches},
                        {"microbatch_size", plan.microbatch_size()},
                        {"schedule", schedule::schedule_kind_name(plan.schedule)},
                        {"placement", plan.placement},
                        {"overlap_allreduce", plan.overlap_allreduce},
                        {"cluster", {{"nodes", cluster.nodes}, {"devices_per_node", cluster.devices_per_node}}},
                        {"stages", stages},
                        {"predicted_step_ms", plan.predicted_step_ms},
                        {"peak_memory_bytes", plan.peak_memory_bytes}};
  if (plan.simulated_step_ms >= 0) out["simulated_step_ms"] = plan.simulated_step_ms;
  return out;
}

void write_plan(const Plan& plan, const Cluster& cluster, const std::string& path) {
  std::ofstream out(path);
  if (!out) LOOM_THROW(path, ": cannot write plan file");
  out << plan_to_json(plan, cluster).dump(2) << "\n";
  if (!out) LOOM_THROW(path, ": error while writing plan file");
}

Plan parse_plan(const std::string& text, const std::string& source) {
  using namespace detail;
  const nlohmann::json doc = parse_json(text, source);
  reject_unknown_fields(doc, {"format", "version", "model", "planner", "global_batch", "microbatches",
                              "microbatch_size", "schedule", "placement", "overlap_allreduce", "cluster", "stages",
                              "predicted_step_ms", "simulated_step_ms", "peak_memory_bytes"},
                        source, "");
  if (string_field_or(doc, "format", "", source, "") != kFormat) LOOM_THROW(source, ": format must be \"", kFormat, "\"");
  if (int_field(doc, "version", source, "", 0, INT_MAX) != 1) LOOM_THROW(source, ": unsupported version (expected 1)");
  Plan plan;
  plan.model = string_field_or(doc, "model", "", source, "");
  plan.planner = string_field_or(doc, "planner", "", source, "");
  plan.placement = string_field_or(doc, "placement", "", source, "");
  plan.global_batch = int_field(doc, "global_batch", source, "", 1, INT_MAX);
  plan.microbatches = int_field(doc, "microbatches", source, "", 1, schedule::kMaxMicrobatches);
  try {
    plan.schedule = parse_plan_schedule(string_field_or(doc, "schedule", "dapple", source, ""));
  } catch (const loom::Error& e) {
    LOOM_THROW(source, ": schedule: ", e.what());
  }
  if (const nlohmann::json* overlap = find_field(doc, "overlap_allreduce", source, "", false)) {
    if (!overlap->is_boolean()) LOOM_THROW(source, ": overlap_allreduce must be true or false");
    plan.overlap_allreduce = overlap->get<bool>();
  }
  plan.predicted_step_ms = number_field_or(doc, "predicted_step_ms", 0, source, "");
  plan.simulated_step_ms = number_field_or(doc, "simulated_step_ms", -1, source, "");
  plan.peak_memory_bytes = number_field_or(doc, "peak_memory_bytes", 0, source, "");
  const nlohmann::json* stages = find_field(doc, "stages", source, "", true);
  if (!stages->is_array() || stages->empty()) LOOM_THROW(source, ": stages must be a non-empty array");
  int devices = 0;
  for (std::size_t i = 0; i < stages->size(); ++i) {
    const std::string where = "stages[" + std::to_string(i) + "]";
    const nlohmann::json& entry = (*stages)[i];
    reject_unknown_fields(entry, {"layers", "replicas", "ranks", "devices"}, source, where);
    const nlohmann::json* layers = find_field(entry, "layers", source, where, true);
    if (!layers->is_array() || layers->size() != 2) LOOM_THROW(source, ": ", where, ".layers must be [first, last]");
    StagePlan stage;
    stage.first_layer = static_cast<int>(integer_value((*layers)[0], source, where + ".layers[0]", 0,
                                                       kMaxProfileLayers - 1));
    stage.last_layer = static_cast<int>(integer_value((*layers)[1], source, where + ".layers[1]", 0,
                                                      kMaxProfileLayers - 1));
    const nlohmann::json* ranks = find_field(entry, "ranks", source, where, true);
    if (!ranks->is_array() || ranks->empty() || ranks->size() > static_cast<std::size_t>(kMaxClusterDevices))
      LOOM_THROW(source, ": ", where, ".ranks must be a non-empty array of at most ", kMaxClusterDevices, " ranks");
    for (std::size_t k = 0; k < ranks->size(); ++k) {
      const std::string at = where + ".ranks[" + std::to_string(k) + "]";
      stage.devices.push_back(static_cast<int>(integer_value((*ranks)[k], source, at, 0, kMaxClusterDevices - 1)));
      devices = std::max(devices, stage.devices.back() + 1);
    }
    if (find_field(entry, "replicas", source, where, false)) {
      const int replicas = int_field(entry, "replicas", source, where, 1, kMaxClusterDevices);
      if (replicas != stage.replicas())
        LOOM_THROW(source, ": ", where, ".replicas is ", replicas, " but ", where, ".ranks lists ", stage.replicas());
    }
    plan.stages.push_back(std::move(stage));
  }
  try {
    validate(plan, plan.stages.back().last_layer + 1, devices);
  } catch (const loom::Error& e) {
    LOOM_THROW(source, ": ", e.what());
  }
  return plan;
}

Plan read_plan(const std::string& path) { return parse_plan(detail::read_text_file(path, "plan"), path); }

}  // namespace loom::planner
