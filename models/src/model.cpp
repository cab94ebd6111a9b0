// The model presets (see model.h) and the override parser.
#include <loom/models/model.h>

#include <charconv>
#include <sstream>

#include <loom/layers/activation.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/pooling.h>
#include <loom/layers/reshape.h>

#include "gpt.h"
#include "model_settings.h"

namespace loom {

std::map<std::string, double> parse_settings(const std::string& model, std::map<std::string, double> settings,
                                             const std::string& overrides) {
  std::stringstream list(overrides);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    LOOM_CHECK(eq != std::string::npos, "--set: '", item, "' is not key=value");
    const std::string key = item.substr(0, eq), text = item.substr(eq + 1);
    auto it = settings.find(key);
    if (it == settings.end()) {
      std::string known;
      for (const auto& [k, v] : settings) known += (known.empty() ? "" : ", ") + k;
      LOOM_THROW("--set: model ", model, " has no setting '", key, "' (it has ", known, ")");
    }
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    LOOM_CHECK(ec == std::errc() && end == text.data() + text.size(), "--set: ", key, "=", text, " is not a number");
    it->second = value;
  }
  return settings;
}

std::int64_t setting_int(const ModelSpec& spec, const std::string& key, std::int64_t minimum) {
  const double v = spec.settings.at(key);
  LOOM_CHECK(v >= static_cast<double>(minimum) && v == static_cast<double>(static_cast<std::int64_t>(v)), "model ",
             spec.name, ": ", key, "=", v, " must be an integer >= ", minimum);
  return static_cast<std::int64_t>(v);
}

namespace {

std::function<LayerPtr()> sequence(std::function<void(Sequential&)> fill) {
  return [fill] {
    auto block = std::make_unique<Sequential>();
    fill(*block);
    return LayerPtr(std::move(block));
  };
}

ModelSpec mlp(const std::string& overrides) {
  ModelSpec spec;
  spec.name = "mlp";
  spec.settings = parse_settings("mlp", {{"input", 784}, {"hidden", 256}, {"layers", 4}, {"classes", 10}}, overrides);
  const std::int64_t input = setting_int(spec, "input"), hidden = setting_int(spec, "hidden"),
                     layers = setting_int(spec, "layers", 2), classes = setting_int(spec, "classes", 2);
  spec.data = {Shape{input}, DType::f32, Shape{}, classes};
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::int64_t in = i == 0 ? input : hidden;
    if (i + 1 == layers) {
      spec.block_names.push_back("classifier");
      spec.block_factories.push_back([in, classes] { return LayerPtr(std::make_unique<Linear>(in, classes)); });
    } else {
      spec.block_names.push_back("hidden" + std::to_string(i));
      spec.block_factories.push_back(sequence([in, hidden](Sequential& s) {
        s.emplace<Linear>(in, hidden);
        s.emplace<ReLU>();
      }));
    }
  }
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
  return spec;
}

ModelSpec cnn(const std::string& overrides) {
  ModelSpec spec;
  spec.name = "cnn";
  spec.settings = parse_settings("cnn", {{"channels", 32}, {"hidden", 128}, {"classes", 10}}, overrides);
  const std::int64_t channels = setting_int(spec, "channels"), hidden = setting_int(spec, "hidden"),
                     classes = setting_int(spec, "classes", 2);
  spec.data = {Shape{1, 28, 28}, DType::f32, Shape{}, classes};
  auto conv_block = [](std::int64_t in, std::int64_t out) {
    return sequence([in, out](Sequential& s) {
      Conv2dOptions conv;
      conv.in_channels = in;
      conv.out_channels = out;
      conv.kernel = 3;
      conv.padding = 1;
      s.emplace<Conv2d>(conv);
      s.emplace<ReLU>();
      Pool2dOptions pool;
      pool.kernel = 2;
      s.emplace<MaxPool2d>(pool);
    });
  };
  spec.block_names = {"conv1", "conv2", "fc", "classifier"};
  spec.block_factories.push_back(conv_block(1, channels));
  spec.block_factories.push_back(conv_block(channels, 2 * channels));
  spec.block_factories.push_back(sequence([channels, hidden](Sequential& s) {
    s.emplace<Flatten>();
    s.emplace<Linear>(2 * channels * 7 * 7, hidden);
    s.emplace<ReLU>();
  }));
  spec.block_factories.push_back([hidden, classes] { return LayerPtr(std::make_unique<Linear>(hidden, classes)); });
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
  return spec;
}

}  // namespace

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

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names{"mlp", "cnn", "gpt"};
  return names;
}

ModelSpec make_model(const std::string& name, const std::string& overrides) {
  if (name == "mlp") return mlp(overrides);
  if (name == "cnn") return cnn(overrides);
  if (name == "gpt") return gpt(overrides);
  LOOM_THROW("unknown model '", name, "' (expected mlp, cnn or gpt)");
}

}  // namespace loom
