// Dropout with partition-independent masks (see dropout.h); core ops only, so CPU and CUDA share it.
#include <loom/layers/dropout.h>

#include <loom/core/ops.h>
#include <loom/core/rng.h>

#include "layer_util.h"

namespace loom {

Tensor dropout_keep_mask(const Shape& shape, DType dtype, Device device, double p, std::uint64_t seed,
                         std::uint64_t key, std::int64_t first_sample) {
  Tensor mask = Tensor::empty(shape, dtype, device);
  const std::int64_t per_sample = shape.rank() >= 1 && shape[0] > 0 ? shape.numel() / shape[0] : shape.numel();
  rng::bernoulli(mask, seed, key, 1.0 - p, static_cast<std::uint64_t>(first_sample * per_sample));
  return mask;
}

Dropout::Dropout(double p) : p_(p) {
  LOOM_CHECK(p >= 0.0 && p < 1.0, "Dropout: p must be in [0, 1), got ", p);
}

Tensor Dropout::apply_mask(const Tensor& x, const Context& ctx) const {
  const std::uint64_t key = rng::stream_key(name(), static_cast<std::uint64_t>(block_index()), ctx.step);
  Tensor mask = dropout_keep_mask(x.shape(), x.dtype(), x.device(), p_, ctx.seed, key, ctx.first_sample);
  ops::mul(x, mask, mask);
  ops::scale(mask, 1.0 / (1.0 - p_));
  return mask;
}

Tensor Dropout::forward_tensor(const Tensor& x, Context& ctx) {
  LOOM_CHECK(x.defined(), describe(), ": undefined input");
  ctx.save_shape("input", x.shape());
  if (!ctx.training || p_ == 0.0) return x;
  return apply_mask(x, ctx);
}

Tensor Dropout::backward_tensor(const Tensor& grad_y, Context& ctx) {
  detail::check_same_shape(*this, "output gradient", grad_y, ctx.get_shape("input"));
  Tensor grad_x = (!ctx.training || p_ == 0.0) ? grad_y : apply_mask(grad_y, ctx);
  ctx.clear();
  return grad_x;
}

TensorList Dropout::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 1);
  return {forward_tensor(inputs[0], ctx)};
}

TensorList Dropout::backward(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  return {backward_tensor(grad_outputs[0], ctx)};
}

double Dropout::flops(const std::vector<Shape>& input_shapes) const {
  return 2.0 * static_cast<double>(input_shapes.at(0).numel());
}

}  // namespace loom
