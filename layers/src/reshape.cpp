// Flatten and Reshape as views (see reshape.h).
#include <loom/layers/reshape.h>

#include "layer_util.h"

namespace loom {

namespace {

Shape flattened(const Shape& s) {
  LOOM_CHECK(s.rank() >= 1, "Flatten: input must have a batch dim");
  return Shape{s[0], s.rank() == 1 ? 1 : s.inner(1)};
}

}  // namespace

Tensor Flatten::forward_tensor(const Tensor& x, Context& ctx) {
  ctx.save_shape("input", x.shape());
  return x.reshape(flattened(x.shape()));
}

Tensor Flatten::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  const Shape input = ctx.get_shape("input");
  detail::check_same_shape(*this, "output gradient", grad_y, flattened(input));
  ctx.clear();
  return grad_y.reshape(input);
}

std::vector<Shape> Flatten::output_shapes(const std::vector<Shape>& input_shapes) const {
  return {flattened(input_shapes.at(0))};
}

Shape Reshape::target(const Shape& input) const {
  LOOM_CHECK(input.rank() >= 1, describe(), ": input must have a batch dim");
  std::vector<std::int64_t> dims{input[0]};
  dims.insert(dims.end(), sample_shape_.begin(), sample_shape_.end());
  std::int64_t known = input[0], infer = -1;
  for (std::size_t i = 1; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      LOOM_CHECK(infer < 0, describe(), ": more than one -1 in the target shape");
      infer = static_cast<std::int64_t>(i);
    } else {
      known *= dims[i];
    }
  }
  if (infer >= 0) {
    LOOM_CHECK(known > 0 && input.numel() % known == 0, describe(), ": cannot reshape ", input.str());
    dims[static_cast<std::size_t>(infer)] = input.numel() / known;
  }
  const Shape out(dims);
  LOOM_CHECK(out.numel() == input.numel(), describe(), ": cannot reshape ", input.str(), " to ", out.str());
  return out;
}

Tensor Reshape::forward_tensor(const Tensor& x, Context& ctx) {
  ctx.save_shape("input", x.shape());
  return x.reshape(target(x.shape()));
}

Tensor Reshape::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  const Shape input = ctx.get_shape("input");
  detail::check_same_shape(*this, "output gradient", grad_y, target(input));
  ctx.clear();
  return grad_y.reshape(input);
}

std::vector<Shape> Reshape::output_shapes(const std::vector<Shape>& input_shapes) const {
  return {target(input_shapes.at(0))};
}

}  // namespace loom
