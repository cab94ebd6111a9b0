// ResNet bottleneck block as torchvision's Bottleneck (ResNet v1.5: the stride sits on the 3x3
// convolution):
//   y = relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x))))))) + identity(x))
// conv1 1x1 in -> width, conv2 3x3 width -> width (stride, groups), conv3 1x1 width -> 4 * planes,
// all without bias; identity is x, or downsample = (1x1 conv with the stride, BatchNorm) when the
// stride or the channel count changes. Children carry torchvision's names (conv1, bn1, ...,
// downsample.0, downsample.1), so torchvision state_dicts map one to one.
// backward_input / backward_weight split every convolution's backward (BatchNorm's gradients
// are produced in backward_input).
#pragma once

#include <memory>

#include <loom/layers/activation.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/sequential.h>

namespace loom {

struct BottleneckOptions {
  std::int64_t in_channels = 0;
  std::int64_t planes = 0;  // output channels are 4 * planes
  std::int64_t stride = 1;
  std::int64_t groups = 1;
  std::int64_t base_width = 64;  // width = planes * base_width / 64 * groups (ResNeXt / wide variants)
};

class ResNetBottleneck : public SplitBackwardLayer {
 public:
  static constexpr std::int64_t kExpansion = 4;
  explicit ResNetBottleneck(const BottleneckOptions& options);

  std::string type() const override { return "ResNetBottleneck"; }
  // [x: N, in, H, W] -> [y: N, 4 * planes, H / stride, W / stride]
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  const BottleneckOptions& options() const { return options_; }
  bool has_downsample() const { return downsample_ != nullptr; }

 private:
  bool uses_blocked_layout(const Tensor& x) const;

  BottleneckOptions options_;
  Conv2d conv1_, conv2_, conv3_;
  BatchNorm2d bn1_, bn2_, bn3_;
  ReLU relu1_, relu2_, relu_out_;
  std::unique_ptr<Sequential> downsample_;
};

}  // namespace loom
