// Preset settings with `--set key=value,...` overrides, shared by the model presets.
#pragma once

#include <map>
#include <string>

#include <loom/models/model.h>

namespace loom {

// `defaults` overridden by "key=value,key=value"; unknown keys and non-numbers throw loom::Error.
std::map<std::string, double> parse_settings(const std::string& model, std::map<std::string, double> defaults,
                                             const std::string& overrides);
// spec.settings[key] as an integer >= minimum, or a loom::Error naming the model and key.
std::int64_t setting_int(const ModelSpec& spec, const std::string& key, std::int64_t minimum = 1);

}  // namespace loom
