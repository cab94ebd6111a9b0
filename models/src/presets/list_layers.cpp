// OnFirst (see list_layers.h).
#include "list_layers.h"

#include <loom/base/error.h>

namespace loom {

TensorList OnFirst::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(!inputs.empty() && inputs[0].defined(), describe(), ": expected inputs [x, ...]");
  ctx.save_shape("entries", Shape{static_cast<std::int64_t>(inputs.size())});
  if (!keep_rest_)  // the dropped entries' gradients are zeros of their shapes (a stage link sends them)
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      ctx.save_shape("shape" + std::to_string(i), inputs[i].shape());
      ctx.save_shape("dtype" + std::to_string(i), Shape{static_cast<std::int64_t>(inputs[i].dtype())});
    }
  TensorList out = inner_->forward({inputs[0]}, ctx.child(0));
  if (keep_rest_) out.insert(out.end(), inputs.begin() + 1, inputs.end());
  return out;
}

TensorList OnFirst::backward(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty(), describe(), ": no output gradient");
  const auto entries = static_cast<std::size_t>(ctx.get_shape("entries")[0]);
  TensorList grads = inner_->backward({grad_outputs[0]}, ctx.child(0));
  grads.resize(entries);
  for (std::size_t i = 1; i < entries; ++i) {
    if (keep_rest_) {
      if (i < grad_outputs.size()) grads[i] = grad_outputs[i];
    } else {
      const auto dtype = static_cast<DType>(ctx.get_shape("dtype" + std::to_string(i))[0]);
      grads[i] = Tensor::zeros(ctx.get_shape("shape" + std::to_string(i)), dtype, grads[0].device());
    }
  }
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
