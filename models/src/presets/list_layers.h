// Small list adapters for presets whose blocks carry several tensors (GNMT, AmoebaNet, XLNet):
// OnFirst applies a one-tensor layer to the first entry of the list and passes the other
// entries through (keep_rest) or drops them (the model's last block, whose single output is the
// logits; the dropped entries get zero gradients, which a stage link can send).
#pragma once

#include <loom/layers/layer.h>

namespace loom {

class OnFirst : public Layer {
 public:
  OnFirst(LayerPtr inner, bool keep_rest) : inner_(std::move(inner)), keep_rest_(keep_rest) {}

  std::string type() const override { return "OnFirst(" + inner_->type() + ")"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override { return {{"inner", inner_.get()}}; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  LayerPtr inner_;
  bool keep_rest_;
};

}  // namespace loom
