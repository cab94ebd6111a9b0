// Linear layer (see linear.h). The input is viewed as a 2-D [rows, in] matrix; no copies.
#include <loom/layers/linear.h>

#include <loom/core/ops.h>

#include "gemm_operand_storage.h"
#include "layer_util.h"

namespace loom {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias)
    : in_features_(in_features), out_features_(out_features), has_bias_(bias) {
  LOOM_CHECK(in_features > 0 && out_features > 0, "Linear: features must be positive, got in ", in_features, ", out ",
             out_features);
  weight_ = make_parameter("weight", Shape{out_features, in_features}, Init::fan_in_uniform(in_features));
  if (bias) bias_ = make_parameter("bias", Shape{out_features}, Init::fan_in_uniform(in_features));
}

void Linear::set_init(Init weight_init, Init bias_init) {
  weight_.init = weight_init;
  bias_.init = bias_init;
}

std::vector<Parameter*> Linear::local_parameters() {
  if (has_bias_) return {&weight_, &bias_};
  return {&weight_};
}

Tensor Linear::forward_tensor(const Tensor& x, Context& ctx) {
  LOOM_CHECK(x.defined(), describe(), ": undefined input");
  detail::check_last_dim(*this, "input", x, in_features_, "weight", weight_.value.shape());
  detail::check_like(*this, "input", x, weight_.value, "weight");
  Shape out_shape = x.shape();
  out_shape[-1] = out_features_;
  Tensor y = Tensor::empty(out_shape, x.dtype(), x.device());
  Tensor y2 = y.flatten_to_2d(-1);
  ops::gemm(x.flatten_to_2d(-1), false, weight_.value, true, y2);
  if (has_bias_) ops::bias_add(y2, bias_.value);
  ctx.save("input", detail::as_gemm_operand(x));  // 16-bit under a rounding GemmOperandScope
  return y;
}

Tensor Linear::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  const Tensor& x = ctx.get("input");
  Shape expected = x.shape();
  expected[-1] = out_features_;
  detail::check_same_shape(*this, "output gradient", grad_y, expected);
  Tensor grad_x = Tensor::empty(x.shape(), grad_y.dtype(), x.device());
  Tensor grad_x2 = grad_x.flatten_to_2d(-1);
  ops::gemm(grad_y.flatten_to_2d(-1), false, weight_.value, false, grad_x2);
  ctx.save("grad_output", grad_y);
  return grad_x;
}

void Linear::backward_weight(Context& ctx) {
  const Tensor x = detail::widened_gemm_operand(ctx.get("input"));
  const Tensor& grad_y = ctx.get("grad_output");
  const Tensor g2 = grad_y.flatten_to_2d(-1);
  ops::gemm(g2, true, x.flatten_to_2d(-1), false, weight_.grad, 1.0, 1.0);
  if (has_bias_) ops::bias_grad(g2, bias_.grad);
  ctx.clear();
}

std::vector<Shape> Linear::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1 && input_shapes[0].rank() >= 1 && input_shapes[0][-1] == in_features_,
             describe(), ": cannot take input shapes of this arity/last dim (in_features ", in_features_, ")");
  Shape out = input_shapes[0];
  out[-1] = out_features_;
  return {out};
}

double Linear::flops(const std::vector<Shape>& input_shapes) const {
  const double rows = static_cast<double>(input_shapes.at(0).outer(-1));
  return 2.0 * rows * static_cast<double>(in_features_) * static_cast<double>(out_features_) +
         (has_bias_ ? rows * static_cast<double>(out_features_) : 0.0);
}

std::size_t Linear::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return detail::f32_bytes(input_shapes.at(0));
}

}  // namespace loom
