// VGG convolution block (see vgg_block.h): a Sequential built from Conv2d, BatchNorm2d, ReLU and
// MaxPool2d, so forward/backward and the split backward are Sequential's.
#include <loom/layers/vgg_block.h>

#include <loom/layers/activation.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/pooling.h>

namespace loom {

VggBlock::VggBlock(const VggBlockOptions& options) : options_(options) {
  LOOM_CHECK(options_.convs > 0, "VggBlock: needs at least one convolution, got ", options_.convs);
  std::int64_t channels = options_.in_channels;
  for (std::int64_t i = 0; i < options_.convs; ++i) {
    const std::string index = std::to_string(i);
    add(std::make_unique<Conv2d>(Conv2dOptions{
            .in_channels = channels, .out_channels = options_.out_channels, .kernel = 3, .padding = 1}),
        "conv" + index);
    if (options_.batch_norm)
      add(std::make_unique<BatchNorm2d>(BatchNorm2dOptions{.channels = options_.out_channels}), "bn" + index);
    add(std::make_unique<ReLU>(), "relu" + index);
    channels = options_.out_channels;
  }
  add(std::make_unique<MaxPool2d>(Pool2dOptions{.kernel = 2, .stride = 2}), "pool");
}

}  // namespace loom
