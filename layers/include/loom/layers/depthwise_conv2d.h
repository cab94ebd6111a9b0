// DepthwiseConv2d: a convolution with one kxk filter per channel, as torch.nn.Conv2d(C, C, k,
// groups=C) (stride, zero padding, dilation, optional bias). Weight [C, 1, kh, kw]; weight and
// bias start from PyTorch's default U(-1/sqrt(kh*kw), 1/sqrt(kh*kw)), so a state_dict maps one to
// one onto nn.Conv2d's. Conv2d with groups == channels computes the same through one im2col GEMM
// per channel; this layer runs direct loops instead (cpu/depthwise_conv.h), about 3x faster at
// AmoebaNet's paper-size shapes (docs/layers.md).
// Backward splits for zero-bubble schedules: backward_input keeps dY in the context,
// backward_weight accumulates the weight (and bias) gradients and frees it.
// CPU only: a CUDA tensor is a loom::Error naming the layer.
#pragma once

#include <loom/layers/layer.h>
#include <loom/layers/window2d.h>

namespace loom {

struct DepthwiseConv2dOptions {
  std::int64_t channels = 0;
  Size2 kernel = 3;
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 dilation = 1;
  bool bias = false;
};

class DepthwiseConv2d : public UnaryLayer {
 public:
  explicit DepthwiseConv2d(const DepthwiseConv2dOptions& options);

  std::string type() const override { return "DepthwiseConv2d"; }
  // [x: N, C, H, W] -> [y: N, C, H', W']
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<Parameter*> local_parameters() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  const DepthwiseConv2dOptions& options() const { return options_; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }  // undefined value when options().bias is false

 private:
  WindowGeometry geometry(const Shape& input) const;
  void check_input(const Tensor& x, const char* what) const;

  DepthwiseConv2dOptions options_;
  Parameter weight_;
  Parameter bias_;
};

}  // namespace loom
