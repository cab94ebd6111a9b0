// SelectInput (see select_input.h).
#include <loom/layers/select_input.h>

#include <string>

#include "layer_util.h"

namespace loom {

SelectInput::SelectInput(std::int64_t index, std::int64_t inputs) {
  LOOM_CHECK(inputs > 0 && index < inputs && index >= -inputs, "SelectInput: index ", index, " out of ", inputs,
             " inputs");
  index_ = static_cast<std::size_t>(index < 0 ? index + inputs : index);
  inputs_ = static_cast<std::size_t>(inputs);
}

TensorList SelectInput::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, inputs_);
  for (std::size_t i = 0; i < inputs.size(); ++i) ctx.save_shape("input" + std::to_string(i), inputs[i].shape());
  return {inputs[index_]};
}

TensorList SelectInput::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(grad_outputs.size() == 1 && grad_outputs[0].defined(), describe(), ": expected one output gradient");
  const Tensor& g = grad_outputs[0];
  TensorList grads;
  for (std::size_t i = 0; i < inputs_; ++i)
    grads.push_back(i == index_ ? g : Tensor::zeros(ctx.get_shape("input" + std::to_string(i)), g.dtype(), g.device()));
  ctx.clear();
  return grads;
}

std::vector<Shape> SelectInput::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == inputs_, "SelectInput: expected ", inputs_, " input shapes, got ",
             input_shapes.size());
  return {input_shapes[index_]};
}

}  // namespace loom
