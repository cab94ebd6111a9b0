// The cnn preset: a small convnet for 28x28 images.
#include <loom/layers/activation.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/pooling.h>
#include <loom/layers/reshape.h>

#include "../model_settings.h"
#include "presets.h"

namespace loom {

namespace {

std::function<LayerPtr()> conv_block(std::int64_t in, std::int64_t out) {
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
}

void build_cnn(ModelSpec& spec) {
  const std::int64_t channels = setting_int(spec, "channels"), hidden = setting_int(spec, "hidden"),
                     classes = setting_int(spec, "classes", 2);
  spec.data = {Shape{1, 28, 28}, DType::f32, Shape{}, classes};
  add_block(spec, "conv1", conv_block(1, channels));
  add_block(spec, "conv2", conv_block(channels, 2 * channels));
  add_block(spec, "fc", sequence([channels, hidden](Sequential& s) {
              s.emplace<Flatten>();
              s.emplace<Linear>(2 * channels * 7 * 7, hidden);
              s.emplace<ReLU>();
            }));
  add_block(spec, "classifier", [hidden, classes] { return LayerPtr(std::make_unique<Linear>(hidden, classes)); });
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

}  // namespace

std::vector<Preset> cnn_presets() {
  return {{"cnn",
           "small convnet for 28x28 images: two conv+ReLU+maxpool blocks, Linear+ReLU, classifier",
           {{"channels", 32, 32, 4, "channels of the first convolution (the second has twice as many)"},
            {"hidden", 128, 128, 16, "width of the fully connected block"},
            {"classes", 10, 10, 10, "classes"}},
           "not a paper model: the same at every size but tiny",
           build_cnn}};
}

}  // namespace loom
