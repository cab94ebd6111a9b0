// SelectInput: passes on one tensor of its input list, for blocks that carry several tensors
// across stage boundaries and a head that needs one (AmoebaNet's cells pass [s_prev, s_new]; the
// classifier reads s_new). Backward returns a gradient for every input: the output's for the
// selected one and zeros for the others, so every tensor that crossed a boundary gets one back.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

class SelectInput : public SplitBackwardLayer {
 public:
  // index < 0 counts from the end (-1: the last input).
  SelectInput(std::int64_t index, std::int64_t inputs);

  std::string type() const override { return "SelectInput"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>&) const override { return 0.0; }
  std::size_t activation_bytes(const std::vector<Shape>&) const override { return 0; }

 private:
  std::size_t index_;
  std::size_t inputs_;
};

}  // namespace loom
