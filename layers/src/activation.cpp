// Activation layers: a CPU loop or a CUDA kernel over the shared math in activation_math.h.
#include <loom/layers/activation.h>

#include "activation_math.h"
#include "cuda_kernels.h"
#include "layer_util.h"

namespace loom {

namespace {

activation_math::Kind math_kind(ActivationKind kind) { return static_cast<activation_math::Kind>(kind); }

template <typename T>
void cpu_forward(activation_math::Kind kind, const T* x, T* y, std::int64_t n) {
  switch (kind) {  // one switch per tensor, not per element
    case activation_math::Kind::relu:
      for (std::int64_t i = 0; i < n; ++i) y[i] = activation_math::forward(activation_math::Kind::relu, x[i]);
      break;
    case activation_math::Kind::gelu:
      for (std::int64_t i = 0; i < n; ++i) y[i] = activation_math::forward(activation_math::Kind::gelu, x[i]);
      break;
    case activation_math::Kind::tanh:
      for (std::int64_t i = 0; i < n; ++i) y[i] = activation_math::forward(activation_math::Kind::tanh, x[i]);
      break;
    case activation_math::Kind::sigmoid:
      for (std::int64_t i = 0; i < n; ++i) y[i] = activation_math::forward(activation_math::Kind::sigmoid, x[i]);
      break;
  }
}

template <typename T>
void cpu_backward(activation_math::Kind kind, const T* saved, const T* g, T* dx, std::int64_t n) {
  switch (kind) {
    case activation_math::Kind::relu:
      for (std::int64_t i = 0; i < n; ++i) dx[i] = activation_math::backward(activation_math::Kind::relu, saved[i], g[i]);
      break;
    case activation_math::Kind::gelu:
      for (std::int64_t i = 0; i < n; ++i) dx[i] = activation_math::backward(activation_math::Kind::gelu, saved[i], g[i]);
      break;
    case activation_math::Kind::tanh:
      for (std::int64_t i = 0; i < n; ++i) dx[i] = activation_math::backward(activation_math::Kind::tanh, saved[i], g[i]);
      break;
    case activation_math::Kind::sigmoid:
      for (std::int64_t i = 0; i < n; ++i)
        dx[i] = activation_math::backward(activation_math::Kind::sigmoid, saved[i], g[i]);
      break;
  }
}

}  // namespace

ActivationKind parse_activation(const std::string& name) {
  if (name == "relu") return ActivationKind::relu;
  if (name == "gelu") return ActivationKind::gelu;
  if (name == "tanh") return ActivationKind::tanh;
  if (name == "sigmoid") return ActivationKind::sigmoid;
  LOOM_THROW("unknown activation '", name, "' (relu, gelu, tanh or sigmoid)");
}

std::string Activation::type() const {
  switch (kind_) {
    case ActivationKind::relu: return "ReLU";
    case ActivationKind::gelu: return "GELU";
    case ActivationKind::tanh: return "Tanh";
    case ActivationKind::sigmoid: return "Sigmoid";
  }
  return "Activation";
}

Tensor Activation::forward_tensor(const Tensor& x, Context& ctx) {
  LOOM_CHECK(x.defined(), describe(), ": undefined input");
  Tensor y = detail::empty_like(x);
  const auto kind = math_kind(kind_);
  if (x.device().is_cuda()) {
    cuda_kernels::activation_forward(static_cast<int>(kind), x, y);
  } else {
    detail::dispatch_floating(x.dtype(), describe(), [&](auto zero) {
      using T = decltype(zero);
      cpu_forward(kind, x.data<T>(), y.data<T>(), x.numel());
    });
  }
  ctx.save("saved", activation_math::saves_input(kind) ? x : y);
  return y;
}

Tensor Activation::backward_tensor(const Tensor& grad_y, Context& ctx) {
  const Tensor saved = ctx.get("saved");
  detail::check_same_shape(*this, "output gradient", grad_y, saved.shape());
  detail::check_like(*this, "output gradient", grad_y, saved, "saved activation");
  Tensor grad_x = detail::empty_like(saved);
  const auto kind = math_kind(kind_);
  if (saved.device().is_cuda()) {
    cuda_kernels::activation_backward(static_cast<int>(kind), saved, grad_y, grad_x);
  } else {
    detail::dispatch_floating(saved.dtype(), describe(), [&](auto zero) {
      using T = decltype(zero);
      cpu_backward(kind, saved.data<T>(), grad_y.data<T>(), grad_x.data<T>(), saved.numel());
    });
  }
  ctx.clear();
  return grad_x;
}

TensorList Activation::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 1);
  return {forward_tensor(inputs[0], ctx)};
}

TensorList Activation::backward(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  return {backward_tensor(grad_outputs[0], ctx)};
}

double Activation::flops(const std::vector<Shape>& input_shapes) const {
  const double n = static_cast<double>(input_shapes.at(0).numel());
  return kind_ == ActivationKind::relu ? n : 8.0 * n;
}

std::size_t Activation::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return detail::f32_bytes(input_shapes.at(0));
}

}  // namespace loom
