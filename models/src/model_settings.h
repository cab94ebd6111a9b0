// Preset settings with `--set key=value,...` overrides, shared by the model presets.
#pragma once

#include <functional>
#include <map>
#include <string>

#include <loom/layers/sequential.h>
#include <loom/models/model.h>

namespace loom {

// `defaults` overridden by "key=value,key=value"; unknown keys and non-numbers throw loom::Error.
std::map<std::string, double> parse_settings(const std::string& model, std::map<std::string, double> defaults,
                                             const std::string& overrides);
// spec.settings[key] as an integer >= minimum, or a loom::Error naming the model and key.
std::int64_t setting_int(const ModelSpec& spec, const std::string& key, std::int64_t minimum = 1);
// spec.settings[key] as a flag (0 or 1).
bool setting_flag(const ModelSpec& spec, const std::string& key);
// spec.settings[key] as a percentage in [0, 100), returned as a fraction (dropout rates).
double setting_fraction(const ModelSpec& spec, const std::string& key);

// A block factory that builds a Sequential and lets `fill` add its layers.
std::function<LayerPtr()> sequence(std::function<void(Sequential&)> fill);
// Appends one block to the spec.
void add_block(ModelSpec& spec, std::string name, std::function<LayerPtr()> factory);

// The `tie_embeddings` setting of the language models (1 by default at every size; 0 unties), and
// what it does: ties `embedding` of block 0 to `projection` of the last block (call after the last
// add_block; names without the block index).
PresetSetting tie_embeddings_setting();
void tie_embeddings(ModelSpec& spec, const std::string& embedding, const std::string& projection);

}  // namespace loom
