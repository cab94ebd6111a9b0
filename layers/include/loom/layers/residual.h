// Residual connection: y = x + body(x) for a body that keeps the shape of its (first) input.
// Backward: dx = dy + body.backward(dy). The split backward is passed through to the body.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

class Residual : public Layer {
 public:
  explicit Residual(LayerPtr body);
  Layer& body() { return *body_; }

  std::string type() const override { return "Residual"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override { return {{"body", body_.get()}}; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  LayerPtr body_;
};

// Element-wise sum of two inputs of the same shape (a residual add across a block boundary).
class Add : public Layer {
 public:
  std::string type() const override { return "Add"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>&) const override { return 0; }
};

}  // namespace loom
