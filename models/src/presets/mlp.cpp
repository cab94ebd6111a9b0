// The mlp preset: Fashion-MNIST-sized multilayer perceptron.
#include <loom/layers/activation.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>

#include "../model_settings.h"
#include "presets.h"

namespace loom {

namespace {

void build_mlp(ModelSpec& spec) {
  const std::int64_t input = setting_int(spec, "input"), hidden = setting_int(spec, "hidden"),
                     layers = setting_int(spec, "layers", 2), classes = setting_int(spec, "classes", 2);
  spec.data = {Shape{input}, DType::f32, Shape{}, classes};
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::int64_t in = i == 0 ? input : hidden;
    if (i + 1 == layers) {
      add_block(spec, "classifier", [in, classes] { return LayerPtr(std::make_unique<Linear>(in, classes)); });
    } else {
      add_block(spec, "hidden" + std::to_string(i), sequence([in, hidden](Sequential& s) {
                  s.emplace<Linear>(in, hidden);
                  s.emplace<ReLU>();
                }));
    }
  }
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

}  // namespace

std::vector<Preset> mlp_presets() {
  return {{"mlp",
           "multilayer perceptron for 28x28 images (Linear+ReLU blocks, then the classifier)",
           {{"input", 784, 784, 16, "input features"},
            {"hidden", 256, 256, 24, "hidden width"},
            {"layers", 4, 4, 4, "blocks (>= 2): layers - 1 hidden blocks and the classifier"},
            {"classes", 10, 10, 4, "classes"}},
           "not a paper model: the same at every size but tiny",
           build_mlp}};
}

}  // namespace loom
