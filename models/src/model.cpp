// The preset registry, the override parser, and the meta-build summary (see model.h).
#include <loom/models/model.h>

#include <charconv>
#include <cmath>
#include <sstream>

#include <loom/core/memory.h>

#include "model_settings.h"
#include "presets/presets.h"

namespace loom {

ModelSize parse_model_size(std::string_view text) {
  if (text == "paper") return ModelSize::paper;
  if (text == "cpu") return ModelSize::cpu;
  if (text == "tiny") return ModelSize::tiny;
  LOOM_THROW("--size: '", excerpt(text), "' is not a model size (expected paper, cpu or tiny)");
}

std::string_view model_size_name(ModelSize size) {
  switch (size) {
    case ModelSize::paper: return "paper";
    case ModelSize::cpu: return "cpu";
    case ModelSize::tiny: return "tiny";
  }
  return "?";
}

std::map<std::string, double> parse_settings(const std::string& model, std::map<std::string, double> settings,
                                             const std::string& overrides) {
  std::stringstream list(overrides);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    LOOM_CHECK(eq != std::string::npos, "--set: '", excerpt(item), "' is not key=value");
    const std::string key = item.substr(0, eq), text = item.substr(eq + 1);
    auto it = settings.find(key);
    if (it == settings.end()) {
      std::string known;
      for (const auto& [k, v] : settings) known += (known.empty() ? "" : ", ") + k;
      LOOM_THROW("--set: model ", model, " has no setting '", excerpt(key), "' (it has ", known, ")");
    }
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    LOOM_CHECK(ec == std::errc() && end == text.data() + text.size() && std::isfinite(value), "--set: ", key, "=",
               excerpt(text), " is not a finite number");
    it->second = value;
  }
  return settings;
}

std::int64_t setting_int(const ModelSpec& spec, const std::string& key, std::int64_t minimum) {
  const double v = spec.settings.at(key);
  // 2^40 bounds every count a model is made of (the meta build and memory checks do the rest).
  LOOM_CHECK(v >= static_cast<double>(minimum) && v <= 1099511627776.0 &&
                 v == static_cast<double>(static_cast<std::int64_t>(v)),
             "model ", spec.name, ": ", key, "=", v, " must be an integer >= ", minimum);
  return static_cast<std::int64_t>(v);
}

bool setting_flag(const ModelSpec& spec, const std::string& key) {
  const double v = spec.settings.at(key);
  LOOM_CHECK(v == 0 || v == 1, "model ", spec.name, ": ", key, "=", v, " must be 0 or 1");
  return v == 1;
}

double setting_fraction(const ModelSpec& spec, const std::string& key) {
  const double v = spec.settings.at(key);
  LOOM_CHECK(v >= 0 && v < 100, "model ", spec.name, ": ", key, "=", v, " must be a percentage in [0, 100)");
  return v / 100.0;
}

PresetSetting tie_embeddings_setting() {
  return {"tie_embeddings", 1, 1, 1, "1: the output projection is the word embedding's weight (tied); 0: its own"};
}

void tie_embeddings(ModelSpec& spec, const std::string& embedding, const std::string& projection) {
  if (!setting_flag(spec, "tie_embeddings")) return;
  spec.ties.push_back({"0." + embedding, std::to_string(spec.blocks() - 1) + "." + projection});
}

std::function<LayerPtr()> sequence(std::function<void(Sequential&)> fill) {
  return [fill] {
    auto block = std::make_unique<Sequential>();
    fill(*block);
    return LayerPtr(std::move(block));
  };
}

void add_block(ModelSpec& spec, std::string name, std::function<LayerPtr()> factory) {
  // A chain a planner and a pipeline can still handle: the planner is measured on 5000-node chains
  // (docs/reliability.md "Bounded planning"); describing 10000 blocks takes seconds under ASan.
  constexpr std::int64_t kMaxBlocks = 10000;
  LOOM_CHECK(spec.blocks() < kMaxBlocks, "model ", spec.name, ": more than ", kMaxBlocks,
             " blocks (check the depth settings: ", spec.describe(), ")");
  spec.block_names.push_back(std::move(name));
  spec.block_factories.push_back(std::move(factory));
}

std::unique_ptr<Chain> ModelSpec::build(std::int64_t first, std::int64_t last) const {
  LOOM_CHECK(0 <= first && first <= last && last <= blocks(), "model ", name, ": blocks [", first, ", ", last,
             ") out of range (it has ", blocks(), " blocks)");
  auto chain = std::make_unique<Chain>(first);
  for (std::int64_t i = first; i < last; ++i) chain->add(block_factories[i]());  // named by global index
  return chain;
}

std::string ModelSpec::describe() const {
  std::ostringstream out;
  out << name << " (";
  bool first = true;
  for (const auto& [k, v] : settings) {
    out << (first ? "" : ", ") << k << "=" << v;
    first = false;
  }
  out << "): " << blocks() << " blocks";
  return out.str();
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = [] {
    std::vector<Preset> list;
    for (auto family : {mlp_presets, cnn_presets, gpt_presets, vgg_presets, resnet_presets, gnmt_presets, bert_presets,
                        xlnet_presets, amoebanet_presets})
      for (Preset& p : family()) list.push_back(std::move(p));
    return list;
  }();
  return all;
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const Preset& p : presets()) list.push_back(p.name);
    return list;
  }();
  return names;
}

const Preset& find_preset(const std::string& name) {
  for (const Preset& p : presets())
    if (p.name == name) return p;
  std::string known;
  for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  LOOM_THROW("unknown model '", excerpt(name), "' (expected one of ", known, "; `loom models` lists them)");
}

ModelSpec make_model(const std::string& name, const std::string& overrides, ModelSize size) {
  const Preset& preset = find_preset(name);
  std::map<std::string, double> defaults;
  for (const PresetSetting& s : preset.settings) defaults[s.key] = s.at(size);
  ModelSpec spec;
  spec.name = name;
  spec.size = size;
  spec.settings = parse_settings(name, defaults, overrides);
  preset.build(spec);
  return spec;
}

std::string settings_text(const std::map<std::string, double>& settings) {
  std::string text;
  for (const auto& [key, value] : settings) {
    char digits[32];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
    text += (text.empty() ? "" : ",") + key + "=" + std::string(digits, ec == std::errc() ? end : digits);
  }
  return text;
}

std::string describe_presets() {
  std::ostringstream out;
  for (const Preset& p : presets()) {
    out << "  " << p.name << ": " << p.summary << "\n";
    for (const PresetSetting& s : p.settings)
      out << "      " << s.key << " = " << s.paper << " (cpu " << s.cpu << ", tiny " << s.tiny << ")  " << s.help
          << "\n";
    if (!p.notes.empty()) out << "      note: " << p.notes << "\n";
  }
  return out.str();
}

ModelSummary summarize(const ModelSpec& spec, std::int64_t batch) {
  LOOM_CHECK(batch >= 1, "summarize: batch ", batch, " must be >= 1");
  ModelSummary summary;
  summary.batch = batch;
  std::vector<std::int64_t> dims{batch};
  for (const std::int64_t d : spec.data.sample_shape.vec()) dims.push_back(d);
  std::vector<Shape> shapes{Shape(dims)};
  MetaScope meta;
  summary.tie_elements.assign(spec.ties.size(), 0);
  for (std::int64_t i = 0; i < spec.blocks(); ++i) {
    std::unique_ptr<Chain> block = spec.build(i, i + 1);
    BlockInfo info = block->describe_blocks(shapes).at(0);
    info.name = spec.block_names.at(static_cast<std::size_t>(i));
    std::int64_t count = 0;
    for (const NamedParameter& p : block->parameters()) {
      if (!p.parameter->trainable) continue;
      count += p.parameter->value.numel();
      for (std::size_t t = 0; t < spec.ties.size(); ++t)
        if (spec.ties[t].copy == p.name) summary.tie_elements.at(t) = p.parameter->value.numel();
    }
    shapes = info.output_shapes;
    summary.parameters += count;
    summary.flops += info.flops;
    summary.activation_bytes += info.activation_bytes;
    summary.block_parameters.push_back(count);
    summary.blocks.push_back(std::move(info));
  }
  for (const std::int64_t elements : summary.tie_elements) summary.tied_copies += elements;
  summary.parameters -= summary.tied_copies;
  return summary;
}

}  // namespace loom
