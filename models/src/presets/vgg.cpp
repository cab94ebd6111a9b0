// The VGG presets (torchvision's VGG-16 and VGG-19 without batch normalisation): one block per
// convolution (Conv2d 3x3 + ReLU, the stage's max pool after its last convolution), then the
// classifier as three blocks (fc6, fc7, fc8), so that a pipeline can cut between any two layers.
#include <cmath>

#include <loom/layers/activation.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/dropout.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/pooling.h>
#include <loom/layers/reshape.h>

#include "../model_settings.h"
#include "presets.h"

namespace loom {

namespace {

std::function<LayerPtr()> conv_block(std::int64_t in, std::int64_t out, bool batch_norm, bool pool) {
  return sequence([=](Sequential& s) {
    auto conv = std::make_unique<Conv2d>(Conv2dOptions{.in_channels = in, .out_channels = out, .kernel = 3, .padding = 1});
    // torchvision's VGG initialisation: kaiming_normal_(fan_out, relu) weights, zero biases (a deep
    // plain network hardly trains from PyTorch's default uniform one).
    conv->weight().init = Init::normal(0.0, std::sqrt(2.0 / static_cast<double>(out * 9)));
    conv->bias().init = Init::zeros();
    s.add(std::move(conv), "conv");
    if (batch_norm) s.add(std::make_unique<BatchNorm2d>(BatchNorm2dOptions{.channels = out}), "bn");
    s.add(std::make_unique<ReLU>(), "relu");
    if (pool) s.add(std::make_unique<MaxPool2d>(Pool2dOptions{.kernel = 2, .stride = 2}), "pool");
  });
}

// torchvision's VGG initialisation of the classifier: N(0, 0.01) weights, zero biases.
std::unique_ptr<Linear> normal_linear(std::int64_t in, std::int64_t out) {
  auto linear = std::make_unique<Linear>(in, out);
  linear->weight().init = Init::normal(0.0, 0.01);
  linear->bias().init = Init::zeros();
  return linear;
}

std::function<LayerPtr()> fc_block(std::int64_t in, std::int64_t out, double dropout, bool flatten) {
  return sequence([=](Sequential& s) {
    if (flatten) s.add(std::make_unique<Flatten>(), "flatten");
    s.add(normal_linear(in, out), "fc");
    s.add(std::make_unique<ReLU>(), "relu");
    s.add(std::make_unique<Dropout>(dropout), "dropout");
  });
}

void build_vgg(ModelSpec& spec, const std::vector<std::int64_t>& convs_per_stage) {
  const std::int64_t image = setting_int(spec, "image", 32), in_channels = setting_int(spec, "in_channels"),
                     classes = setting_int(spec, "classes", 2), width = setting_int(spec, "width"),
                     fc = setting_int(spec, "fc");
  const bool batch_norm = setting_flag(spec, "batch_norm");
  const double dropout = setting_fraction(spec, "dropout");
  LOOM_CHECK(image % 32 == 0, "model ", spec.name, ": image=", image, " must be a multiple of 32 (five 2x2 pools)");
  spec.data = {Shape{in_channels, image, image}, DType::f32, Shape{}, classes};
  std::int64_t channels = in_channels;
  for (std::size_t stage = 0; stage < convs_per_stage.size(); ++stage) {
    const std::int64_t out = width * std::min<std::int64_t>(std::int64_t{1} << stage, 8);  // 64 128 256 512 512
    for (std::int64_t i = 0; i < convs_per_stage[stage]; ++i) {
      const bool last = i + 1 == convs_per_stage[stage];
      add_block(spec, "conv" + std::to_string(stage + 1) + "_" + std::to_string(i + 1),
                conv_block(channels, out, batch_norm, last));
      channels = out;
    }
  }
  const std::int64_t side = image / 32;
  add_block(spec, "fc6", fc_block(channels * side * side, fc, dropout, true));
  add_block(spec, "fc7", fc_block(fc, fc, dropout, false));
  add_block(spec, "fc8", [fc, classes] { return LayerPtr(normal_linear(fc, classes)); });
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

std::vector<PresetSetting> vgg_settings() {
  return {{"image", 224, 32, 32, "image side (a multiple of 32); Fashion-MNIST is padded to it"},
          {"in_channels", 3, 1, 1, "image channels"},
          {"classes", 1000, 10, 10, "classes"},
          {"width", 64, 16, 2, "channels of the first stage (then x2, x4, x8, x8)"},
          {"fc", 4096, 256, 16, "width of fc6 and fc7"},
          {"batch_norm", 0, 0, 0, "1: BatchNorm after every convolution (torchvision's vgg*_bn)"},
          {"dropout", 50, 50, 50, "dropout after fc6 and fc7, percent"}};
}

const char* kVggNotes =
    "the classifier reads the last feature map directly (7x7 at image 224, as torchvision's adaptive "
    "pool leaves it; 1x1 at image 32)";

}  // namespace

std::vector<Preset> vgg_presets() {
  return {{"vgg16", "VGG-16 (Simonyan & Zisserman; torchvision vgg16): 13 conv blocks and 3 fully connected blocks",
           vgg_settings(), kVggNotes, [](ModelSpec& spec) { build_vgg(spec, {2, 2, 3, 3, 3}); }},
          {"vgg19", "VGG-19 (torchvision vgg19): 16 conv blocks and 3 fully connected blocks", vgg_settings(),
           kVggNotes, [](ModelSpec& spec) { build_vgg(spec, {2, 2, 4, 4, 4}); }}};
}

}  // namespace loom
