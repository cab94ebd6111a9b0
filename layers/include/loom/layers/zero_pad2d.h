// ZeroPad2d: pads an NCHW tensor's planes with zeros, as torch.nn.ZeroPad2d((left, right, top,
// bottom)); a negative amount crops that side instead (PyTorch allows it too). FactorizedReduce
// uses (-1, 1, -1, 1): the plane shifted up-left by one pixel, keeping its size.
// Backward is the same window taken the other way (the gradient of the padded border is dropped,
// the cropped border gets zeros). CPU only: a CUDA tensor is a loom::Error naming the layer.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

struct ZeroPad2dOptions {
  std::int64_t left = 0, right = 0, top = 0, bottom = 0;
};

class ZeroPad2d : public UnaryLayer {
 public:
  explicit ZeroPad2d(const ZeroPad2dOptions& options) : options_(options) {}

  std::string type() const override { return "ZeroPad2d"; }
  // [x: N, C, H, W] -> [N, C, H + top + bottom, W + left + right] (both must stay positive)
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>&) const override { return 0.0; }
  std::size_t activation_bytes(const std::vector<Shape>&) const override { return 0; }

  const ZeroPad2dOptions& options() const { return options_; }

 private:
  Shape padded(const Shape& input) const;
  ZeroPad2dOptions options_;
};

}  // namespace loom
