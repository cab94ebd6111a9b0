// Models as chains of blocks, built lazily: a rank constructs only the blocks of its own stage
// (block i keeps global index i, so its parameters are the same whichever rank builds it).
//
// Presets by name with overrides (`--set hidden=512,layers=12`):
//   mlp   Fashion-MNIST-sized MLP: block 0 = Linear(input, hidden)+ReLU, then hidden blocks, then
//         the classifier; settings input, hidden, layers (blocks, >= 2), classes
//   cnn   small convnet for 28x28 images: two conv+ReLU+maxpool blocks, a Linear+ReLU block and the
//         classifier; settings channels, hidden, classes
//   gpt   decoder-only transformer over bytes: embedding block (token + position, dropout), `layers`
//         pre-LN causal transformer blocks, head block (LayerNorm + Linear to the vocabulary);
//         settings vocab, seq, dim, heads, layers, dropout (percent)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <loom/layers/chain.h>
#include <loom/models/dataset.h>

namespace loom {

struct ModelSpec {
  std::string name;
  std::map<std::string, double> settings;  // the preset after overrides
  DataShape data;
  std::int64_t targets_per_sample = 1;     // targets that count in the loss mean per sample
  std::vector<std::string> block_names;
  std::vector<std::function<LayerPtr()>> block_factories;
  std::function<LayerPtr()> make_loss;

  std::int64_t blocks() const { return static_cast<std::int64_t>(block_factories.size()); }
  // Blocks [first, last) as a Chain whose first block has global index `first` (not initialised).
  std::unique_ptr<Chain> build(std::int64_t first, std::int64_t last) const;
  std::unique_ptr<Chain> build_all() const { return build(0, blocks()); }
  std::string describe() const;  // "mlp (hidden=256, input=784, layers=4, classes=10): 4 blocks"
};

// `overrides` is "key=value,key=value"; unknown models and keys, and bad values, throw loom::Error.
ModelSpec make_model(const std::string& name, const std::string& overrides = "");
const std::vector<std::string>& model_names();

}  // namespace loom
