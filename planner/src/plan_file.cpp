// Plan JSON read/write.
#include <loom/planner/plan_file.h>

#include <climits>
#include <fstream>
#include <set>
#include <tuple>

#include <loom/planner/profile.h>
#include <loom/schedule/validator.h>

#include <loom/base/error.h>
#include <loom/base/json_fields.h>

namespace loom::planner {

namespace {
const char* kFormat = "loom-plan";
constexpr int kVersion = 3;
constexpr double kMaxPlanBytes = 1e18;  // a predicted peak beyond an exabyte is a typo

nlohmann::json stage_json(const StagePlan& s, const Cluster& cluster) {
  nlohmann::json devices = nlohmann::json::array();
  for (int d : s.devices) devices.push_back({{"node", cluster.node_of(d)}, {"device", d % cluster.devices_per_node}});
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& [first, last] : s.chunk_layers()) layers.push_back({first, last});
  nlohmann::json out = {{"layers", layers}, {"replicas", s.replicas()}, {"ranks", s.devices},
                        {"devices", devices}, {"recompute", s.recompute}};
  if (s.predicted_peak_bytes >= 0) out["predicted_peak_bytes"] = s.predicted_peak_bytes;
  return out;
}

nlohmann::json assumptions_json(const PlanAssumptions& a) {
  return {{"optimizer", a.optimizer},
          {"optimizer_state_factor", a.optimizer_state_factor},
          {"precision", a.precision},
          {"model_size", a.model_size},
          {"model_settings", a.model_settings},
          {"cluster", a.cluster},
          {"device_memory_bytes", a.device_memory_bytes},
          {"profile", a.profile},
          {"profile_fingerprint", a.profile_fingerprint},
          {"loom_version", a.loom_version}};
}

}  // namespace

nlohmann::json plan_to_json(const Plan& plan, const Cluster& cluster) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StagePlan& s : plan.stages) stages.push_back(stage_json(s, cluster));
  nlohmann::json out = {{"format", kFormat},
                        {"version", kVersion},
                        {"model", plan.model},
                        {"planner", plan.planner},
                        {"global_batch", plan.global_batch},
                        {"microbatches", plan.microbatches},
                        {"microbatch_size", plan.microbatch_size()},
                        {"schedule", schedule::schedule_kind_name(plan.schedule)},
                        {"chunks", plan.chunks},
                        {"zero", plan.zero},
                        {"placement", plan.placement},
                        {"overlap_allreduce", plan.overlap_allreduce},
                        {"cluster", {{"nodes", cluster.nodes}, {"devices_per_node", cluster.devices_per_node}}},
                        {"tensor_parallel", plan.tensor_parallel},
                        {"stages", stages},
                        {"predicted_step_ms", plan.predicted_step_ms},
                        {"peak_memory_bytes", plan.peak_memory_bytes},
                        {"assumptions", assumptions_json(plan.assumptions)}};
  if (plan.lower_bound_ms >= 0) out["lower_bound_ms"] = plan.lower_bound_ms;
  return out;
}

void write_plan(const Plan& plan, const Cluster& cluster, const std::string& path) {
  std::ofstream out(path);
  if (!out) LOOM_THROW(path, ": cannot write plan file");
  out << plan_to_json(plan, cluster).dump(2) << "\n";
  if (!out) LOOM_THROW(path, ": error while writing plan file");
}

namespace {

using namespace json;

// [first, last] at `field`.
LayerRange layer_range(const nlohmann::json& value, const std::string& source, const std::string& field) {
  if (!value.is_array() || value.size() != 2) LOOM_THROW(source, ": ", field, " must be [first, last]");
  return {static_cast<int>(integer_value(value[0], source, field + "[0]", 0, kMaxProfileLayers - 1)),
          static_cast<int>(integer_value(value[1], source, field + "[1]", 0, kMaxProfileLayers - 1))};
}

// The stage's layers: version 1 one [first, last]; version 2 one such range per chunk.
void read_stage_layers(const nlohmann::json& entry, const std::string& source, const std::string& where, int version,
                       int chunks, StagePlan& stage) {
  const nlohmann::json* layers = find_field(entry, "layers", source, where, true);
  std::vector<LayerRange> ranges;
  if (version == 1) {
    ranges.push_back(layer_range(*layers, source, where + ".layers"));
  } else {
    if (!layers->is_array() || layers->size() != static_cast<std::size_t>(chunks))
      LOOM_THROW(source, ": ", where, ".layers must list ", chunks, " range(s) [first, last], one per chunk (chunks ",
                 chunks, ")");
    for (std::size_t c = 0; c < layers->size(); ++c)
      ranges.push_back(layer_range((*layers)[c], source, where + ".layers[" + std::to_string(c) + "]"));
  }
  std::tie(stage.first_layer, stage.last_layer) = ranges.front();
  stage.later_chunks.assign(ranges.begin() + 1, ranges.end());
}

// Version 2's per-stage fields: recompute and predicted_peak_bytes.
void read_stage_memory(const nlohmann::json& entry, const std::string& source, const std::string& where,
                       StagePlan& stage) {
  if (const nlohmann::json* recompute = find_field(entry, "recompute", source, where, false)) {
    if (!recompute->is_array()) LOOM_THROW(source, ": ", where, ".recompute must be an array of block indices");
    for (std::size_t k = 0; k < recompute->size(); ++k)
      stage.recompute.push_back(static_cast<int>(integer_value(
          (*recompute)[k], source, where + ".recompute[" + std::to_string(k) + "]", 0, kMaxProfileLayers - 1)));
  }
  if (find_field(entry, "predicted_peak_bytes", source, where, false)) {
    stage.predicted_peak_bytes = number_field(entry, "predicted_peak_bytes", source, where);
    if (!(stage.predicted_peak_bytes >= 0 && stage.predicted_peak_bytes <= kMaxPlanBytes))
      LOOM_THROW(source, ": ", where, ".predicted_peak_bytes must be in [0, ", kMaxPlanBytes, "]");
  }
}

StagePlan read_stage(const nlohmann::json& entry, const std::string& source, const std::string& where, int version,
                     int chunks) {
  if (version == 1) reject_unknown_fields(entry, {"layers", "replicas", "ranks", "devices"}, source, where);
  else
    reject_unknown_fields(entry, {"layers", "replicas", "ranks", "devices", "recompute", "predicted_peak_bytes"},
                          source, where);
  StagePlan stage;
  read_stage_layers(entry, source, where, version, chunks, stage);
  const nlohmann::json* ranks = find_field(entry, "ranks", source, where, true);
  if (!ranks->is_array() || ranks->empty() || ranks->size() > static_cast<std::size_t>(kMaxClusterDevices))
    LOOM_THROW(source, ": ", where, ".ranks must be a non-empty array of at most ", kMaxClusterDevices, " ranks");
  for (std::size_t k = 0; k < ranks->size(); ++k) {
    const std::string at = where + ".ranks[" + std::to_string(k) + "]";
    stage.devices.push_back(static_cast<int>(integer_value((*ranks)[k], source, at, 0, kMaxClusterDevices - 1)));
  }
  if (find_field(entry, "replicas", source, where, false)) {
    const int replicas = int_field(entry, "replicas", source, where, 1, kMaxClusterDevices);
    if (replicas != stage.replicas())
      LOOM_THROW(source, ": ", where, ".replicas is ", replicas, " but ", where, ".ranks lists ", stage.replicas());
  }
  if (version >= 2) read_stage_memory(entry, source, where, stage);
  return stage;
}

// Version 3's "assumptions" (PlanAssumptions).
PlanAssumptions read_assumptions(const nlohmann::json& doc, const std::string& source) {
  PlanAssumptions a;
  const nlohmann::json* entry = find_field(doc, "assumptions", source, "", false);
  if (entry == nullptr) return a;
  if (!entry->is_object()) LOOM_THROW(source, ": assumptions must be an object");
  reject_unknown_fields(*entry, {"optimizer", "optimizer_state_factor", "precision", "model_size", "model_settings",
                                 "cluster", "device_memory_bytes", "profile", "profile_fingerprint", "loom_version"},
                        source, "assumptions");
  a.optimizer = string_field_or(*entry, "optimizer", "", source, "assumptions");
  a.optimizer_state_factor = number_field_or(*entry, "optimizer_state_factor", -1, source, "assumptions");
  a.precision = string_field_or(*entry, "precision", "", source, "assumptions");
  a.model_size = string_field_or(*entry, "model_size", "", source, "assumptions");
  a.model_settings = string_field_or(*entry, "model_settings", "", source, "assumptions");
  a.cluster = string_field_or(*entry, "cluster", "", source, "assumptions");
  a.device_memory_bytes = number_field_or(*entry, "device_memory_bytes", -1, source, "assumptions");
  if (!(a.device_memory_bytes <= kMaxPlanBytes))
    LOOM_THROW(source, ": assumptions.device_memory_bytes must be at most ", kMaxPlanBytes);
  a.profile = string_field_or(*entry, "profile", "", source, "assumptions");
  a.profile_fingerprint = string_field_or(*entry, "profile_fingerprint", "", source, "assumptions");
  a.loom_version = string_field_or(*entry, "loom_version", "", source, "assumptions");
  return a;
}

// The top-level fields but the stages; returns the version.
int read_header(const nlohmann::json& doc, const std::string& source, Plan& plan) {
  if (string_field_or(doc, "format", "", source, "") != kFormat) LOOM_THROW(source, ": format must be \"", kFormat, "\"");
  const int version = int_field(doc, "version", source, "", 0, INT_MAX);
  if (version < 1 || version > kVersion)
    LOOM_THROW(source, ": version: unsupported version ", version, " (1 to ", kVersion, ")");
  if (version == 1)
    reject_unknown_fields(doc, {"format", "version", "model", "planner", "global_batch", "microbatches",
                                "microbatch_size", "schedule", "placement", "overlap_allreduce", "cluster", "stages",
                                "predicted_step_ms", "simulated_step_ms", "peak_memory_bytes"},
                          source, "");
  else if (version == 2)
    reject_unknown_fields(doc, {"format", "version", "model", "planner", "global_batch", "microbatches",
                                "microbatch_size", "schedule", "chunks", "zero", "placement", "overlap_allreduce",
                                "cluster", "stages", "predicted_step_ms", "simulated_step_ms", "peak_memory_bytes"},
                          source, "");
  else
    reject_unknown_fields(doc, {"format", "version", "model", "planner", "global_batch", "microbatches",
                                "microbatch_size", "schedule", "chunks", "zero", "placement", "overlap_allreduce",
                                "cluster", "tensor_parallel", "stages", "predicted_step_ms", "peak_memory_bytes",
                                "lower_bound_ms", "assumptions"},
                          source, "");
  plan.model = string_field_or(doc, "model", "", source, "");
  plan.planner = string_field_or(doc, "planner", "", source, "");
  plan.placement = string_field_or(doc, "placement", "", source, "");
  plan.global_batch = int_field(doc, "global_batch", source, "", 1, INT_MAX);
  plan.microbatches = int_field(doc, "microbatches", source, "", 1, schedule::kMaxMicrobatches);
  const std::string kind = string_field_or(doc, "schedule", "dapple", source, "");
  try {
    plan.schedule = version == 1 ? parse_plan_schedule(kind) : schedule::parse_schedule_kind(kind);
  } catch (const loom::Error& e) {
    LOOM_THROW(source, ": schedule: ", e.what());
  }
  if (version >= 2) {
    const int one = schedule::is_multi_chunk(plan.schedule) ? 2 : 1;
    plan.chunks = find_field(doc, "chunks", source, "", false) ? int_field(doc, "chunks", source, "", 1, schedule::kMaxChunks)
                                                               : one;
    plan.zero = find_field(doc, "zero", source, "", false) ? int_field(doc, "zero", source, "", 0, 1) : 0;
  }
  if (const nlohmann::json* overlap = find_field(doc, "overlap_allreduce", source, "", false)) {
    if (!overlap->is_boolean()) LOOM_THROW(source, ": overlap_allreduce must be true or false");
    plan.overlap_allreduce = overlap->get<bool>();
  }
  if (version >= 3) {
    plan.tensor_parallel = find_field(doc, "tensor_parallel", source, "", false)
                               ? int_field(doc, "tensor_parallel", source, "", 1, kMaxClusterDevices)
                               : 1;
    plan.assumptions = read_assumptions(doc, source);
    plan.lower_bound_ms = number_field_or(doc, "lower_bound_ms", -1, source, "");
  }
  plan.predicted_step_ms = number_field_or(doc, "predicted_step_ms", 0, source, "");
  number_field_or(doc, "simulated_step_ms", -1, source, "");  // older files: the same as predicted_step_ms now
  plan.peak_memory_bytes = number_field_or(doc, "peak_memory_bytes", 0, source, "");
  return version;
}

}  // namespace

Plan parse_plan(const std::string& text, const std::string& source) {
  const nlohmann::json doc = parse_json(text, source);
  Plan plan;
  const int version = read_header(doc, source, plan);
  const nlohmann::json* stages = find_field(doc, "stages", source, "", true);
  if (!stages->is_array() || stages->empty()) LOOM_THROW(source, ": stages must be a non-empty array");
  int devices = 0, layers = 0;
  for (std::size_t i = 0; i < stages->size(); ++i) {
    plan.stages.push_back(read_stage((*stages)[i], source, "stages[" + std::to_string(i) + "]", version, plan.chunks));
    for (int d : plan.stages.back().devices) devices = std::max(devices, d + 1);
    for (const auto& range : plan.stages.back().chunk_layers()) layers = std::max(layers, range.second + 1);
  }
  try {
    validate(plan, layers, devices);
  } catch (const loom::Error& e) {
    LOOM_THROW(source, ": ", e.what());
  }
  return plan;
}

Plan read_plan(const std::string& path) { return parse_plan(json::read_text_file(path, "plan"), path); }

}  // namespace loom::planner
