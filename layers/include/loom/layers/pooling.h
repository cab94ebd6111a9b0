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

class MaxPool2d : public Layer {
 public:
  explicit MaxPool2d(const Pool2dOptions& options);
  std::string type() const override { return "MaxPool2d"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;
  const Pool2dOptions& options() const { return options_; }

 private:
  WindowGeometry geometry(const Shape& input) const;
  Pool2dOptions options_;
};

class AvgPool2d : public Layer {
 public:
  explicit AvgPool2d(const Pool2dOptions& options);
  std::string type() const override { return "AvgPool2d"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;
  const Pool2dOptions& options() const { return options_; }

 private:
  WindowGeometry geometry(const Shape& input) const;
  Pool2dOptions options_;
};

// Mean over each channel's plane: [N, C, H, W] -> [N, C].
class GlobalAvgPool2d : public Layer {
 public:
  std::string type() const override { return "GlobalAvgPool2d"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;
};

}  // namespace loom
