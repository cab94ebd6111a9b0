// Profile JSON read/write, and load_profile, which accepts either profile format.
#include <loom/planner/profile_json.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <loom/planner/graph_profile.h>

#include <loom/base/error.h>
#include <loom/base/json_fields.h>

namespace loom::planner {

namespace {

const char* kFormat = "loom-profile";

LayerCost read_cost(const nlohmann::json& object, const std::string& source, const std::string& where) {
  using Kind = LayerCostField::Kind;
  LayerCost cost;
  const bool split = json::find_field(object, "backward_input_ms", source, where, false) ||
                     json::find_field(object, "backward_weight_ms", source, where, false);
  for (const LayerCostField& f : kLayerCostFields) {
    double& value = cost.*f.member;
    switch (f.kind) {
      case Kind::required: value = json::number_field(object, f.name, source, where); break;
      // activation_bytes comes before it in the table
      case Kind::boundary: value = json::number_field_or(object, f.name, cost.activation_bytes, source, where); break;
      case Kind::split_time:  // both or neither
        if (split) value = json::number_field(object, f.name, source, where);
        break;
      case Kind::optional: value = json::number_field_or(object, f.name, 0.0, source, where); break;
    }
  }
  return cost;
}

// The cost fields a layer or measurement may carry (version 2 added all but the first four).
const std::vector<std::string> kCostFields = [] {
  std::vector<std::string> names;
  for (const LayerCostField& f : kLayerCostFields) names.emplace_back(f.name);
  return names;
}();

std::vector<std::string> with(std::vector<std::string> fields, std::initializer_list<std::string> more) {
  fields.insert(fields.end(), more);
  return fields;
}

nlohmann::json cost_json(const LayerCost& cost) {
  nlohmann::json out = nlohmann::json::object();
  for (const LayerCostField& f : kLayerCostFields)
    if (f.kind != LayerCostField::Kind::split_time || cost.backward_input_ms >= 0) out[f.name] = cost.*f.member;
  return out;
}

// Version 2's data and optimizer costs (all optional).
void read_data_costs(const nlohmann::json& doc, const std::string& source, Profile& profile) {
  profile.input_bytes = json::number_field_or(doc, "input_bytes", 0, source, "");
  profile.target_bytes = json::number_field_or(doc, "target_bytes", 0, source, "");
  profile.data_ms = json::number_field_or(doc, "data_ms", 0, source, "");
  const nlohmann::json* steps = json::find_field(doc, "step_ms_per_mb", source, "", false);
  if (!steps) return;
  if (!steps->is_object())
    LOOM_THROW(source,
               ": step_ms_per_mb must be an object (optimizer: ms per "
               "MB of parameters)");
  for (const auto& [optimizer, value] : steps->items())
    profile.step_ms_per_mb[optimizer] = json::number_field(*steps, optimizer.c_str(), source, "step_ms_per_mb");
}

// "ties": [{"layers": [canonical, copy], "bytes": B}, ...] (optional).
void read_ties(const nlohmann::json& doc, const std::string& source, Profile& profile) {
  const nlohmann::json* ties = json::find_field(doc, "ties", source, "", false);
  if (!ties) return;
  if (!ties->is_array()) LOOM_THROW(source, ": ties must be an array");
  for (std::size_t t = 0; t < ties->size(); ++t) {
    const std::string where = "ties[" + std::to_string(t) + "]";
    const nlohmann::json& entry = (*ties)[t];
    json::reject_unknown_fields(entry, {"layers", "bytes"}, source, where);
    const nlohmann::json* layers = json::find_field(entry, "layers", source, where, true);
    if (!layers->is_array() || layers->size() != 2) LOOM_THROW(source, ": ", where, ".layers must be [canonical, copy]");
    LayerTie tie;
    tie.canonical_layer = static_cast<int>(json::integer_value((*layers)[0], source, where + ".layers[0]", 0, kMaxProfileLayers - 1));
    tie.copy_layer = static_cast<int>(json::integer_value((*layers)[1], source, where + ".layers[1]", 0, kMaxProfileLayers - 1));
    tie.bytes = json::number_field(entry, "bytes", source, where);
    profile.ties.push_back(tie);
  }
}

}  // namespace

Profile parse_profile_json(const std::string& text, const std::string& source) {
  const nlohmann::json doc = json::parse_json(text, source);
  json::reject_unknown_fields(doc,
                                {"format", "version", "model", "model_size", "model_settings", "precision", "microbatch",
                                 "device", "layers", "ties", "input_bytes", "target_bytes", "data_ms", "step_ms_per_mb"},
                                source, "");
  const std::string format = json::string_field_or(doc, "format", "", source, "");
  if (format != kFormat) LOOM_THROW(source, ": format must be \"", kFormat, "\"");
  const int version = json::int_field(doc, "version", source, "", 0, INT_MAX);
  if (version != 1 && version != 2) LOOM_THROW(source, ": unsupported version ", version, " (expected 1 or 2)");
  Profile profile;
  profile.source = source;
  profile.model = json::string_field_or(doc, "model", "", source, "");
  profile.device = json::string_field_or(doc, "device", "", source, "");
  profile.model_size = json::string_field_or(doc, "model_size", "", source, "");
  profile.model_settings = json::string_field_or(doc, "model_settings", "", source, "");
  profile.precision = json::string_field_or(doc, "precision", "", source, "");
  profile.microbatch = json::number_field(doc, "microbatch", source, "");
  const nlohmann::json* layers = json::find_field(doc, "layers", source, "", true);
  if (!layers->is_array() || layers->empty()) LOOM_THROW(source, ": layers must be a non-empty array");
  if (layers->size() > static_cast<std::size_t>(kMaxProfileLayers))
    LOOM_THROW(source, ": layers has ", layers->size(), " entries; at most ", kMaxProfileLayers, " are supported");
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const std::string where = "layers[" + std::to_string(i) + "]";
    const nlohmann::json& entry = (*layers)[i];
    json::reject_unknown_fields(entry, with(kCostFields, {"name", "parameter_bytes", "measurements"}), source, where);
    LayerProfile layer;
    layer.name = json::string_field_or(entry, "name", "layer" + std::to_string(i), source, where);
    layer.cost = read_cost(entry, source, where);
    layer.parameter_bytes = json::number_field(entry, "parameter_bytes", source, where);
    if (const nlohmann::json* extra = json::find_field(entry, "measurements", source, where, false)) {
      if (!extra->is_array()) LOOM_THROW(source, ": ", where, ".measurements must be an array");
      for (std::size_t k = 0; k < extra->size(); ++k) {
        const std::string at = where + ".measurements[" + std::to_string(k) + "]";
        json::reject_unknown_fields((*extra)[k], with(kCostFields, {"microbatch"}), source, at);
        Measurement m;
        m.microbatch = json::number_field((*extra)[k], "microbatch", source, at);
        m.cost = read_cost((*extra)[k], source, at);
        layer.extra.push_back(m);
      }
    }
    profile.layers.push_back(std::move(layer));
  }
  read_ties(doc, source, profile);
  read_data_costs(doc, source, profile);
  validate(profile);
  return profile;
}

Profile read_profile_json(const std::string& path) {
  return parse_profile_json(json::read_text_file(path, "profile"), path);
}

nlohmann::json profile_to_json(const Profile& profile) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerProfile& layer : profile.layers) {
    nlohmann::json entry = cost_json(layer.cost);
    entry["name"] = layer.name;
    entry["parameter_bytes"] = layer.parameter_bytes;
    if (!layer.extra.empty()) {
      nlohmann::json extra = nlohmann::json::array();
      for (const Measurement& m : layer.extra) {
        nlohmann::json point = cost_json(m.cost);
        point["microbatch"] = m.microbatch;
        extra.push_back(point);
      }
      entry["measurements"] = extra;
    }
    layers.push_back(entry);
  }
  nlohmann::json out = {{"format", kFormat},        {"version", 2},
                        {"model", profile.model},   {"microbatch", profile.microbatch},
                        {"device", profile.device}, {"layers", layers}};
  for (const auto& [key, value] : {std::pair{"model_size", &profile.model_size},
                                   {"model_settings", &profile.model_settings}, {"precision", &profile.precision}})
    if (!value->empty()) out[key] = *value;
  out["input_bytes"] = profile.input_bytes;
  out["target_bytes"] = profile.target_bytes;
  out["data_ms"] = profile.data_ms;
  if (!profile.step_ms_per_mb.empty()) out["step_ms_per_mb"] = profile.step_ms_per_mb;
  for (const LayerTie& tie : profile.ties)
    out["ties"].push_back({{"layers", {tie.canonical_layer, tie.copy_layer}}, {"bytes", tie.bytes}});
  return out;
}

void write_profile_json(const Profile& profile, const std::string& path) {
  std::ofstream out(path);
  if (!out) LOOM_THROW(path, ": cannot write profile file");
  out << profile_to_json(profile).dump(1) << "\n";
  if (!out) LOOM_THROW(path, ": error while writing profile file");
}

namespace {

std::string fnv1a_hex(const std::string& text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace

Profile load_profile(const std::string& path, double microbatch) {
  const std::string text = json::read_text_file(path, "profile");
  const auto first = text.find_first_not_of(" \t\r\n");
  Profile profile;
  if (first != std::string::npos && text[first] == '{') {
    profile = parse_profile_json(text, path);
    if (microbatch > 0 && microbatch != profile.microbatch)
      LOOM_THROW(path, ": the JSON profile was measured at micro-batch ", profile.microbatch,
                   "; a different profiled size cannot be imposed on it");
  } else {
    std::istringstream in(text);
    profile = parse_graph_profile(in, path, microbatch);
  }
  profile.fingerprint = fnv1a_hex(text);
  return profile;
}

}  // namespace loom::planner
