// 2-D pooling over NCHW tensors, as torch.nn.MaxPool2d, AvgPool2d (floor mode) and global
// average pooling (AdaptiveAvgPool2d(1) followed by flatten: [N, C, H, W] -> [N, C]).
// Max pooling keeps the argmax of each window (the first maximum in row-major order, as PyTorch's
// CPU kernel does; NaN wins), so its backward routes each gradient to exactly one input.
// CUDA: cuDNN pooling; global average pooling uses the generic reduction and GEMM ops.
#pragma once

#include <optional>

#include <loom/layers/layer.h>
#include <loom/layers/window2d.h>

namespace loom {

struct Pool2dOptions {
  Size2 kernel = 1;
  std::optional<Size2> stride = std::nullopt;  // default: the kernel size (PyTorch's default)
  Size2 padding = 0;            // implicit -inf (max) or zero (average) padding
  bool count_include_pad = true;  // average pooling only: padded zeros count in the divisor
};

// What max and average pooling share: the options, the window over the input and the output
// shape; they differ in the kernel and in what forward keeps.
class Pool2d : public UnaryLayer {
 public:
  const Pool2dOptions& options() const { return options_; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;

 protected:
  explicit Pool2d(const Pool2dOptions& options) : options_(options) {}
  WindowGeometry geometry(const Shape& input) const;

  Pool2dOptions options_;
};

class MaxPool2d : public Pool2d {
 public:
  explicit MaxPool2d(const Pool2dOptions& options);
  std::string type() const override { return "MaxPool2d"; }
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;
};

class AvgPool2d : public Pool2d {
 public:
  explicit AvgPool2d(const Pool2dOptions& options);
  std::string type() const override { return "AvgPool2d"; }
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;
};

// Mean over each channel's plane: [N, C, H, W] -> [N, C].
class GlobalAvgPool2d : public UnaryLayer {
 public:
  std::string type() const override { return "GlobalAvgPool2d"; }
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;
};

}  // namespace loom
