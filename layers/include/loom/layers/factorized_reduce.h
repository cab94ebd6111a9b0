// FactorizedReduce: halves the spatial size and maps `in` to `out` channels with two 1x1 stride-2
// convolutions that see interleaved pixels, as the AmoebaNet/NASNet cells (and torchgpipe's
// benchmark model) do:
//   r = relu(x);  y = bn(concat(conv1(r), conv2(pad(r))))
// conv1 reads the even pixels (0, 2, ...), conv2 the odd ones: pad = ZeroPad2d(-1, 1, -1, 1),
// the plane shifted up-left by one. Each conv has out / 2 channels and no bias. Children carry
// torchgpipe's names (conv1, conv2, bn). backward_weight holds both convolutions' weight gradients.
#pragma once

#include <loom/layers/activation.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/zero_pad2d.h>

namespace loom {

class FactorizedReduce : public SplitBackwardLayer {
 public:
  FactorizedReduce(std::int64_t in_channels, std::int64_t out_channels);  // out_channels even

  std::string type() const override { return "FactorizedReduce"; }
  // [x: N, in, H, W] -> [N, out, ceil(H / 2), ceil(W / 2)]
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  std::int64_t out_channels_;
  ReLU relu_;
  Conv2d conv1_;
  ZeroPad2d pad_;
  Conv2d conv2_;
  BatchNorm2d bn_;
};

}  // namespace loom
