// Models as chains of blocks, built lazily: a rank constructs only the blocks of its own stage
// (block i keeps global index i, so its parameters are the same whichever rank builds it).
//
// Presets by name (`loom models` lists them), each at three sizes — `paper` (the published
// model, the default), `cpu` (trains a few hundred steps on a 2-core machine in minutes) and
// `tiny` (tests, seconds) — with `--set key=value,...` overrides on top of the size's settings.
// Every preset's settings, with their values at each size, are in presets() (and `--help`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <loom/layers/chain.h>
#include <loom/models/dataset.h>

namespace loom {

enum class ModelSize : unsigned char { paper, cpu, tiny };
ModelSize parse_model_size(std::string_view text);  // "paper" | "cpu" | "tiny", else loom::Error
std::string_view model_size_name(ModelSize size);

// Two parameters that are one: a word embedding and the output projection tied to it (BERT, GPT,
// XLNet). `copy` holds the values of `canonical` at every step. Full parameter names, the block's
// global index first ("0.token.weight", "5.1.weight"). The runtime keeps them one
// (runtime/tied_parameters.h): a single tensor where both sit on one rank's model chunk, else
// identical copies whose gradients are summed over the ranks that hold one. A checkpoint stores
// the canonical name only; `loom describe` counts the parameter once.
struct ParameterTie {
  std::string canonical, copy;
};

struct ModelSpec {
  std::string name;
  ModelSize size = ModelSize::paper;
  std::map<std::string, double> settings;  // the size's settings after overrides
  DataShape data;
  std::int64_t targets_per_sample = 1;     // targets that count in the loss mean per sample
  std::vector<std::string> block_names;
  std::vector<std::function<LayerPtr()>> block_factories;
  std::function<LayerPtr()> make_loss;
  std::vector<ParameterTie> ties;          // tied parameters (see ParameterTie)

  std::int64_t blocks() const { return static_cast<std::int64_t>(block_factories.size()); }
  // Blocks [first, last) as a Chain whose first block has global index `first` (not initialised).
  std::unique_ptr<Chain> build(std::int64_t first, std::int64_t last) const;
  std::unique_ptr<Chain> build_all() const { return build(0, blocks()); }
  std::string describe() const;  // "mlp (hidden=256, input=784, layers=4, classes=10): 4 blocks"
};

// One setting of a preset and its value at each size.
struct PresetSetting {
  std::string key;
  double paper = 0, cpu = 0, tiny = 0;
  std::string help;
  double at(ModelSize size) const { return size == ModelSize::paper ? paper : size == ModelSize::cpu ? cpu : tiny; }
};

struct Preset {
  std::string name;     // "vgg19"
  std::string summary;  // one line for `loom models`
  std::vector<PresetSetting> settings;
  std::string notes;    // how the preset differs from the paper's model, if it does
  // Fills spec.data, the blocks and the loss from spec.settings (name, size, settings are set).
  std::function<void(ModelSpec&)> build;
};

const std::vector<Preset>& presets();
const Preset& find_preset(const std::string& name);  // loom::Error listing the presets if unknown
const std::vector<std::string>& model_names();

// `overrides` is "key=value,key=value" on top of the size's settings; unknown models and keys,
// and bad values, throw loom::Error.
ModelSpec make_model(const std::string& name, const std::string& overrides = "", ModelSize size = ModelSize::paper);
// Every setting as `overrides` takes them, "key=value,key=value" in key order, each value in the
// fewest digits that read back as the same number (a profile and a plan record the model so).
std::string settings_text(const std::map<std::string, double>& settings);

// The settings and their values at every size, one line per setting, for `--help`.
std::string describe_presets();

// What a model is without its weights: every block built in a meta build (core/memory.h:
// shapes, no memory), with trainable parameters, forward FLOPs, saved-activation and output
// bytes for `batch` samples, and the totals.
struct ModelSummary {
  std::vector<BlockInfo> blocks;
  std::vector<std::int64_t> block_parameters;  // trainable parameter elements per block
  std::int64_t parameters = 0;                 // trainable parameter elements in all, a tied one once
  std::int64_t tied_copies = 0;                // elements of tied copies (in block_parameters, not in parameters)
  std::vector<std::int64_t> tie_elements;      // per ModelSpec::ties entry: its copy's elements
  std::int64_t batch = 1;
  double flops = 0;                            // forward, per `batch` samples
  std::size_t activation_bytes = 0;            // saved by forward, per `batch` samples
};
ModelSummary summarize(const ModelSpec& spec, std::int64_t batch = 1);

}  // namespace loom
