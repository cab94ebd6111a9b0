// Activation layers: a CUDA kernel and the f64 CPU loop over the shared math in activation_math.h;
// the f32 CPU path evaluates the same formulas with Eigen's vectorised erf/exp/tanh.
#include <loom/layers/activation.h>

#include <algorithm>
#include <type_traits>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include <loom/core/ops.h>
#include <loom/core/parallel.h>

#include "activation_math.h"
#include "cpu/relu_mask.h"
#include "cuda/kernels.h"
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

// f32 on the CPU: the same formulas over Eigen arrays, whose erf/exp/tanh are vectorised.
// GCC 12 reports Eigen's AVX-512 intrinsics (_mm512_undefined_ps) as maybe-uninitialised: a false
// positive, silenced for these two functions only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
using ArrayMap = Eigen::Map<Array>;
using ConstArrayMap = Eigen::Map<const Array>;

void eigen_forward(activation_math::Kind kind, const float* x_ptr, float* y_ptr, std::int64_t n) {
  const ConstArrayMap x(x_ptr, n);
  ArrayMap y(y_ptr, n);
  switch (kind) {
    case activation_math::Kind::relu: y = x.max(0.0f); break;
    case activation_math::Kind::gelu: y = 0.5f * x * (1.0f + (x * 0.70710678118654752440f).erf()); break;
    case activation_math::Kind::tanh: y = x.tanh(); break;
    case activation_math::Kind::sigmoid: y = 1.0f / (1.0f + (-x).exp()); break;
  }
}

void eigen_backward(activation_math::Kind kind, const float* saved_ptr, const float* g_ptr, float* dx_ptr,
                    std::int64_t n) {
  const ConstArrayMap s(saved_ptr, n), g(g_ptr, n);
  ArrayMap dx(dx_ptr, n);
  switch (kind) {
    case activation_math::Kind::relu: dx = (s > 0.0f).select(g, 0.0f); break;
    case activation_math::Kind::gelu:
      dx = g * (0.5f * (1.0f + (s * 0.70710678118654752440f).erf()) +
                s * (-0.5f * s * s).exp() * 0.39894228040143267794f);
      break;
    case activation_math::Kind::tanh: dx = g * (1.0f - s * s); break;
    case activation_math::Kind::sigmoid: dx = g * s * (1.0f - s); break;
  }
}
#pragma GCC diagnostic pop

template <typename T>
void forward_chunk(activation_math::Kind kind, const T* x, T* y, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>)
    eigen_forward(kind, x, y, n);
  else
    cpu_forward(kind, x, y, n);
}

template <typename T>
void backward_chunk(activation_math::Kind kind, const T* saved, const T* g, T* dx, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>)
    eigen_backward(kind, saved, g, dx, n);
  else
    cpu_backward(kind, saved, g, dx, n);
}

// Under a 16-bit GemmOperandScope a ReLU on the CPU keeps a bit mask instead of its f32 output
// (relu_mask.h): the next layer's copy of the output is then the only one, saved rounded.
bool keeps_relu_mask(ActivationKind kind, const Tensor& x) {
  return kind == ActivationKind::relu && !x.device().is_cuda() && x.dtype() == DType::f32 &&
         ops::gemm_operand_dtype() != DType::f32;
}

// fn(first word, first element, elements) over n elements' mask words, spread over threads by
// whole words.
template <typename Fn>
void over_mask_words(std::int64_t n, Fn fn) {
  constexpr std::int64_t bits = detail::relu_mask::kBitsPerWord;
  parallel_for(detail::relu_mask::words(n), (1 << 14) / bits, [&](std::int64_t begin, std::int64_t end) {
    fn(begin, begin * bits, std::min(end * bits, n) - begin * bits);
  });
}

// y = max(x, 0) and its mask.
Tensor relu_with_mask(const Tensor& x, const Tensor& y) {
  Tensor mask = Tensor::empty(Shape{detail::relu_mask::words(x.numel())}, DType::i32, x.device());
  const float* in = x.data<float>();
  float* out = y.data<float>();
  auto* bits = reinterpret_cast<std::uint32_t*>(mask.data<std::int32_t>());
  over_mask_words(x.numel(), [&](std::int64_t word, std::int64_t first, std::int64_t count) {
    eigen_forward(activation_math::Kind::relu, in + first, out + first, count);
    detail::relu_mask::pack_positive(out + first, bits + word, count);
  });
  return mask;
}

// The input gradient from a kept mask: grad_y where the output was positive.
Tensor relu_backward_from_mask(const Tensor& mask, const Tensor& grad_y) {
  Tensor grad_x = detail::empty_like(grad_y);
  const auto* bits = reinterpret_cast<const std::uint32_t*>(mask.data<std::int32_t>());
  const float* g = grad_y.data<float>();
  float* dx = grad_x.data<float>();
  over_mask_words(grad_y.numel(), [&](std::int64_t word, std::int64_t first, std::int64_t count) {
    detail::relu_mask::select(bits + word, g + first, dx + first, count);
  });
  return grad_x;
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
  if (keeps_relu_mask(kind_, x)) {
    ctx.save("mask", relu_with_mask(x, y));
    ctx.save_shape("shape", x.shape());
    return y;
  }
  const auto kind = math_kind(kind_);
  if (x.device().is_cuda()) {
    cuda_kernels::activation_forward(static_cast<int>(kind), x, y);
  } else {
    dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
      const T* in = x.data<T>();
      T* out = y.data<T>();
      parallel_for(x.numel(), 1 << 14, [&](std::int64_t begin, std::int64_t end) {
        forward_chunk(kind, in + begin, out + begin, end - begin);
      });
    });
  }
  ctx.save("saved", activation_math::saves_input(kind) ? x : y);
  return y;
}

Tensor Activation::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  if (ctx.has("mask")) {
    detail::check_same_shape(*this, "output gradient", grad_y, ctx.get_shape("shape"));
    LOOM_CHECK(grad_y.dtype() == DType::f32 && !grad_y.device().is_cuda(), describe(),
               ": the output gradient of a masked ReLU must be f32 in host memory, got ", dtype_name(grad_y.dtype()));
    Tensor grad_x = relu_backward_from_mask(ctx.get("mask"), grad_y);
    ctx.clear();
    return grad_x;
  }
  const Tensor saved = ctx.get("saved");
  detail::check_same_shape(*this, "output gradient", grad_y, saved.shape());
  detail::check_like(*this, "output gradient", grad_y, saved, "saved activation");
  Tensor grad_x = detail::empty_like(saved);
  const auto kind = math_kind(kind_);
  if (saved.device().is_cuda()) {
    cuda_kernels::activation_backward(static_cast<int>(kind), saved, grad_y, grad_x);
  } else {
    dispatch_floating(saved.dtype(), describe(), [&]<typename T>(T) {
      const T* s = saved.data<T>();
      const T* g = grad_y.data<T>();
      T* dx = grad_x.data<T>();
      parallel_for(saved.numel(), 1 << 14, [&](std::int64_t begin, std::int64_t end) {
        backward_chunk(kind, s + begin, g + begin, dx + begin, end - begin);
      });
    });
  }
  ctx.clear();
  return grad_x;
}

double Activation::flops(const std::vector<Shape>& input_shapes) const {
  const double n = static_cast<double>(input_shapes.at(0).numel());
  return kind_ == ActivationKind::relu ? n : 8.0 * n;
}

std::size_t Activation::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return detail::f32_bytes(input_shapes.at(0));
}

}  // namespace loom
