// Flatten and Reshape: views of the input (no copy) that keep dim 0, the batch, so a micro-batch
// split still works; backward views the gradient back to the input's shape.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

// [B, d1, d2, ...] -> [B, d1 * d2 * ...] (PyTorch's nn.Flatten with start_dim 1).
class Flatten : public UnaryLayer {
 public:
  std::string type() const override { return "Flatten"; }
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>&) const override { return 0.0; }
  std::size_t activation_bytes(const std::vector<Shape>&) const override { return 0; }
};

// [B, ...] -> [B, sample_shape...]; one entry of sample_shape may be -1 (inferred).
class Reshape : public UnaryLayer {
 public:
  explicit Reshape(std::vector<std::int64_t> sample_shape) : sample_shape_(std::move(sample_shape)) {}
  std::string type() const override { return "Reshape"; }
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>&) const override { return 0.0; }
  std::size_t activation_bytes(const std::vector<Shape>&) const override { return 0; }

 private:
  Shape target(const Shape& input) const;
  std::vector<std::int64_t> sample_shape_;
};

}  // namespace loom
