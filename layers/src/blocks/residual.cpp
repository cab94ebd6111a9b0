// Residual wrapper and two-input Add (see residual.h).
#include <loom/layers/residual.h>

#include <loom/core/ops.h>

#include "layer_util.h"

namespace loom {

Residual::Residual(LayerPtr body) : body_(std::move(body)) {
  LOOM_CHECK(body_ != nullptr, "Residual: null body");
}

TensorList Residual::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 1);
  TensorList out = body_->forward(inputs, ctx.child(0));
  LOOM_CHECK(out.size() == 1, describe(), ": body returned ", out.size(), " outputs, expected 1");
  detail::check_same_shape(*this, "body output", out[0], inputs[0].shape());
  Tensor y = detail::empty_like(out[0]);
  ops::add(inputs[0], out[0], y);
  return {y};
}

TensorList Residual::backward_input(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  TensorList g = body_->backward_input(grad_outputs, ctx.child(0));
  Tensor dx = detail::empty_like(grad_outputs[0]);
  ops::add(grad_outputs[0], g.at(0), dx);
  return {dx};
}

void Residual::backward_weight(Context& ctx) {
  body_->backward_weight(ctx.child(0));
  ctx.clear();
}

TensorList Residual::backward(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  TensorList g = body_->backward(grad_outputs, ctx.child(0));
  Tensor dx = detail::empty_like(grad_outputs[0]);
  ops::add(grad_outputs[0], g.at(0), dx);
  ctx.clear();
  return {dx};
}

std::vector<Shape> Residual::output_shapes(const std::vector<Shape>& input_shapes) const {
  return {input_shapes.at(0)};
}

double Residual::flops(const std::vector<Shape>& input_shapes) const {
  return body_->flops(input_shapes) + static_cast<double>(input_shapes.at(0).numel());
}

std::size_t Residual::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return body_->activation_bytes(input_shapes);
}

TensorList Add::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 2);
  detail::check_same_shape(*this, "second input", inputs[1], inputs[0].shape());
  Tensor y = detail::empty_like(inputs[0]);
  ops::add(inputs[0], inputs[1], y);
  ctx.save_shape("input", inputs[0].shape());
  return {y};
}

TensorList Add::backward(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  detail::check_same_shape(*this, "output gradient", grad_outputs[0], ctx.get_shape("input"));
  ctx.clear();
  return {grad_outputs[0], grad_outputs[0]};
}

std::vector<Shape> Add::output_shapes(const std::vector<Shape>& input_shapes) const {
  return {input_shapes.at(0)};
}

double Add::flops(const std::vector<Shape>& input_shapes) const {
  return static_cast<double>(input_shapes.at(0).numel());
}

}  // namespace loom
