// OnFirst (see list_layers.h).
#include "list_layers.h"

#include <loom/core/error.h>

namespace loom {

TensorList OnFirst::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(!inputs.empty() && inputs[0].defined(), describe(), ": expected inputs [x, ...]");
  ctx.save_shape("entries", Shape{static_cast<std::int64_t>(inputs.size())});
  TensorList out = inner_->forward({inputs[0]}, ctx.child(0));
  if (keep_rest_) out.insert(out.end(), inputs.begin() + 1, inputs.end());
  return out;
}

TensorList OnFirst::backward(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty(), describe(), ": no output gradient");
  const auto entries = static_cast<std::size_t>(ctx.get_shape("entries")[0]);
  TensorList grads = inner_->backward({grad_outputs[0]}, ctx.child(0));
  grads.resize(entries);
  if (keep_rest_)
    for (std::size_t i = 1; i < entries && i < grad_outputs.size(); ++i) grads[i] = grad_outputs[i];
  ctx.clear();
  return grads;
}

std::vector<Shape> OnFirst::output_shapes(const std::vector<Shape>& input_shapes) const {
  std::vector<Shape> out = inner_->output_shapes({input_shapes.at(0)});
  if (keep_rest_) out.insert(out.end(), input_shapes.begin() + 1, input_shapes.end());
  return out;
}

double OnFirst::flops(const std::vector<Shape>& input_shapes) const { return inner_->flops({input_shapes.at(0)}); }

std::size_t OnFirst::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return inner_->activation_bytes({input_shapes.at(0)});
}

}  // namespace loom
