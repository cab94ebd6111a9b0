// The ResNet-50 preset (torchvision resnet50, v1.5): the stem (7x7 convolution with stride 2,
// BatchNorm, ReLU, 3x3 max pool with stride 2), one block per bottleneck (3, 4, 6, 3 of them
// over four stages) and the head (global average pool, Linear), so a pipeline can cut between
// any two bottlenecks.
#include <loom/layers/activation.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/pooling.h>
#include <loom/layers/resnet_bottleneck.h>

#include "../model_settings.h"
#include "presets.h"

namespace loom {

namespace {

void build_resnet(ModelSpec& spec) {
  const std::int64_t image = setting_int(spec, "image", 8), in_channels = setting_int(spec, "in_channels"),
                     classes = setting_int(spec, "classes", 2), width = setting_int(spec, "width");
  spec.data = {Shape{in_channels, image, image}, DType::f32, Shape{}, classes};
  add_block(spec, "stem", sequence([=](Sequential& s) {
              s.add(std::make_unique<Conv2d>(Conv2dOptions{.in_channels = in_channels,
                                                           .out_channels = width,
                                                           .kernel = 7,
                                                           .stride = 2,
                                                           .padding = 3,
                                                           .bias = false}),
                    "conv1");
              s.add(std::make_unique<BatchNorm2d>(BatchNorm2dOptions{.channels = width}), "bn1");
              s.add(std::make_unique<ReLU>(), "relu");
              s.add(std::make_unique<MaxPool2d>(Pool2dOptions{.kernel = 3, .stride = 2, .padding = 1}), "maxpool");
            }));
  std::int64_t channels = width;
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t depth = setting_int(spec, "stage" + std::to_string(stage + 1));
    const std::int64_t planes = width << stage;
    for (std::int64_t i = 0; i < depth; ++i) {
      const BottleneckOptions options{
          .in_channels = channels, .planes = planes, .stride = i == 0 && stage > 0 ? 2 : 1, .base_width = 64};
      add_block(spec, "layer" + std::to_string(stage + 1) + "." + std::to_string(i),
                [options] { return LayerPtr(std::make_unique<ResNetBottleneck>(options)); });
      channels = planes * ResNetBottleneck::kExpansion;
    }
  }
  add_block(spec, "head", sequence([=](Sequential& s) {
              s.add(std::make_unique<GlobalAvgPool2d>(), "avgpool");
              s.add(std::make_unique<Linear>(channels, classes), "fc");
            }));
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

}  // namespace

std::vector<Preset> resnet_presets() {
  return {{"resnet50",
           "ResNet-50 v1.5 (torchvision resnet50): stem, 16 bottleneck blocks, head",
           {{"image", 224, 32, 64, "image side; Fashion-MNIST is padded to it (tiny: 64, so that BatchNorm never normalises a 1x1 map of a few rows)"},
            {"in_channels", 3, 1, 1, "image channels"},
            {"classes", 1000, 10, 10, "classes"},
            {"width", 64, 16, 4, "stem channels and the first stage's planes (then x2, x4, x8)"},
            {"stage1", 3, 1, 1, "bottlenecks in stage 1"},
            {"stage2", 4, 1, 1, "bottlenecks in stage 2"},
            {"stage3", 6, 1, 1, "bottlenecks in stage 3"},
            {"stage4", 3, 1, 1, "bottlenecks in stage 4"}},
           "convolutions start from PyTorch's default initialisation, not torchvision's kaiming_normal_ "
           "(fan_out); BatchNorm statistics are per micro-batch and replica (no synchronised BatchNorm)",
           build_resnet}};
}

}  // namespace loom
