// Conv2d: 2-D convolution over NCHW tensors, as torch.nn.Conv2d (stride, zero padding, dilation,
// groups, optional bias). Weight [out, in / groups, kh, kw]; both weight and bias start from
// PyTorch's default U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in / groups * kh * kw.
//
// CPU (the rule and its measurements: layers/src/cpu/conv_path.cpp): oneDNN for f32 where loom is
// built with it; else, and for f64, Winograd F(2x2, 3x3) for 3x3 stride-1 kernels, and otherwise
// im2col + one BLAS GEMM per group over a chunk of images whose columns sit side by side (large
// spatial planes: one image per GEMM, written straight into the output; small planes: many
// images per GEMM). Forward keeps only the input; backward recomputes the columns.
// Backward splits in two for zero-bubble schedules: backward_input (col2im of W^T dY) keeps dY in
// the context, backward_weight (dY im2col(x)^T and the bias sum) accumulates and frees it.
// CUDA: cuDNN (cuda/conv2d.cpp), FMA math only, so results compare with the CPU's in fp32.
#pragma once

#include <loom/layers/layer.h>
#include <loom/layers/window2d.h>

namespace loom {

struct Conv2dOptions {
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  Size2 kernel = 1;
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 dilation = 1;
  std::int64_t groups = 1;
  bool bias = true;
};

class Conv2d : public UnaryLayer {
 public:
  // Conv2d({.in_channels = 64, .out_channels = 64, .kernel = 3, .padding = 1})
  explicit Conv2d(const Conv2dOptions& options);

  std::string type() const override { return "Conv2d"; }
  // [x: N, in, H, W] -> [y: N, out, H', W']
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<Parameter*> local_parameters() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  const Conv2dOptions& options() const { return options_; }
  // The CPU implementation this convolution runs for `dtype`: "onednn", "winograd" or "im2col".
  std::string cpu_path(DType dtype) const;
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }  // undefined value when options().bias is false

 private:
  WindowGeometry geometry(const Shape& input) const;
  void check_input(const Tensor& x) const;
  Tensor input_gradient(const Shape& input_shape, const Tensor& grad_y) const;
  void accumulate_weight_gradient(const Tensor& x, const Tensor& grad_y);

  Conv2dOptions options_;
  Parameter weight_;
  Parameter bias_;
};

}  // namespace loom
