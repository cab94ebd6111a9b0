// SeparableConv2d (see separable_conv2d.h): a Sequential of its four layers.
#include <loom/layers/separable_conv2d.h>

#include <loom/layers/activation.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/depthwise_conv2d.h>

namespace loom {

SeparableConv2d::SeparableConv2d(const SeparableConv2dOptions& options) : options_(options) {
  LOOM_CHECK(options.in_channels > 0 && options.out_channels > 0 && options.kernel > 0 && options.kernel % 2 == 1 &&
                 options.stride > 0,
             "SeparableConv2d: channels and stride must be positive and the kernel odd, got kernel ", options.kernel);
  emplace<ReLU>();
  emplace<DepthwiseConv2d>(DepthwiseConv2dOptions{.channels = options.in_channels,
                                                  .kernel = options.kernel,
                                                  .stride = options.stride,
                                                  .padding = options.kernel / 2});
  emplace<Conv2d>(Conv2dOptions{
      .in_channels = options.in_channels, .out_channels = options.out_channels, .kernel = 1, .bias = false});
  emplace<BatchNorm2d>(BatchNorm2dOptions{.channels = options.out_channels});
}

}  // namespace loom
