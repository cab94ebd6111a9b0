// `loom describe`: a model preset block by block without allocating its weights (a meta build):
// parameters, saved activations, the output that would cross a stage cut, forward FLOPs.
#include <cstdio>

#include <nlohmann/json.hpp>

#include <loom/models/model.h>

#include "commands.h"
#include "model_options.h"

namespace loom::apps {

namespace {

struct DescribeOptions {
  std::string model = "mlp", size = "paper", overrides;
  std::int64_t batch = 1;
  bool json = false, settings = false;
};

std::string shapes_text(const std::vector<Shape>& shapes) {
  std::string text;
  for (const Shape& s : shapes) {
    if (!text.empty()) text += ' ';
    text += s.str();
  }
  return text;
}

nlohmann::json summary_json(const ModelSpec& spec, const ModelSummary& summary) {
  nlohmann::json blocks = nlohmann::json::array();
  for (std::size_t i = 0; i < summary.blocks.size(); ++i) {
    const BlockInfo& b = summary.blocks[i];
    nlohmann::json shapes = nlohmann::json::array();
    for (const Shape& s : b.output_shapes) shapes.push_back(s.vec());
    blocks.push_back({{"index", b.index}, {"name", b.name}, {"type", b.type},
                      {"parameters", summary.block_parameters[i]}, {"activation_bytes", b.activation_bytes},
                      {"output_bytes", b.output_bytes}, {"flops", b.flops}, {"output_shapes", shapes}});
  }
  return {{"model", spec.name},           {"size", model_size_name(spec.size)},
          {"settings", spec.settings},    {"batch", summary.batch},
          {"parameters", summary.parameters}, {"parameter_bytes", summary.parameters * 4},
          {"flops", summary.flops},       {"activation_bytes", summary.activation_bytes},
          {"blocks", blocks}};
}

void print_table(const ModelSpec& spec, const ModelSummary& summary) {
  std::printf("%s, %s size, per %lld sample(s), f32 bytes\n", spec.describe().c_str(),
              std::string(model_size_name(spec.size)).c_str(), static_cast<long long>(summary.batch));
  std::printf("%5s  %-16s %-28s %14s %14s %14s %12s  %s\n", "block", "name", "type", "parameters",
              "activations B", "output B", "GFLOP fwd", "output shapes");
  for (std::size_t i = 0; i < summary.blocks.size(); ++i) {
    const BlockInfo& b = summary.blocks[i];
    std::printf("%5lld  %-16s %-28s %14lld %14zu %14zu %12.4f  %s\n", static_cast<long long>(b.index),
                b.name.c_str(), b.type.substr(0, 28).c_str(), static_cast<long long>(summary.block_parameters[i]),
                b.activation_bytes, b.output_bytes, b.flops / 1e9, shapes_text(b.output_shapes).c_str());
  }
  std::printf("total: %lld parameters (%.2f M, %.1f MB f32), %.3f GFLOP forward, %.1f MB saved activations\n",
              static_cast<long long>(summary.parameters), summary.parameters / 1e6, summary.parameters * 4 / 1e6,
              summary.flops / 1e9, static_cast<double>(summary.activation_bytes) / 1e6);
}

}  // namespace

void add_describe_command(CLI::App& app) {
  static DescribeOptions o;
  CLI::App* cmd = app.add_subcommand(
      "describe", "Print a model block by block (parameters, activation and output bytes, FLOPs) without its weights");
  add_model_options(cmd, o.model, o.size, o.overrides);
  cmd->add_option("--batch", o.batch, "samples the byte and FLOP figures are for")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  cmd->add_flag("--json", o.json, "print JSON: {model, size, settings, parameters, flops, blocks: [...]}");
  cmd->add_flag("--settings", o.settings,
                "print every preset's settings (for --set) at each size instead of the model");
  cmd->callback([] {
    if (o.settings) {
      std::printf("Presets and their settings (paper size, then cpu and tiny):\n%s", describe_presets().c_str());
      return;
    }
    const ModelSpec spec = make_model(o.model, o.overrides, parse_model_size(o.size));
    const ModelSummary summary = summarize(spec, o.batch);
    if (o.json)
      std::printf("%s\n", summary_json(spec, summary).dump(2).c_str());
    else
      print_table(spec, summary);
  });
}

void add_models_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("models", "List the model presets, one line each (`loom describe` for one)");
  cmd->callback([] {
    for (const Preset& p : presets()) std::printf("%-12s %s\n", p.name.c_str(), p.summary.c_str());
  });
}

}  // namespace loom::apps
