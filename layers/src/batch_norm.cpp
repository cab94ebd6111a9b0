// BatchNorm2d forward/backward (see batch_norm.h): CPU loops with per-channel sums accumulated in
// double, channels split over loom's threads, cuDNN in cuda/batch_norm.cu.
#include <loom/layers/batch_norm.h>

#include <algorithm>

#include <loom/core/memory.h>
#include <loom/core/parallel.h>

#include "cpu/batch_norm_blocked.h"
#include "cpu/batch_norm_math.h"
#include "cpu/blocked_layout.h"
#include "cuda/batch_norm.h"
#include "layer_util.h"

namespace loom {

namespace {

struct Planes {
  std::int64_t batch, channels, plane;
  explicit Planes(const Shape& s) : batch(s[0]), channels(s[1]), plane(s[2] * s[3]) {}
  std::int64_t per_channel() const { return batch * plane; }
  // Channels per parallel_for chunk: about 16k values each, so small planes are not split finely.
  std::int64_t grain() const { return std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, per_channel())); }
};

// Sums in double over kLanes interleaved partial sums, which the compiler keeps in one vector
// register: the same order whatever the thread count (a channel is never split between threads).
constexpr int kLanes = 8;

// sum of f(i) for i in [0, n)
template <typename F>
double lane_sum(std::int64_t n, F f) {
  double lane[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += f(i + l);
  double total = 0;
  for (; i < n; ++i) total += f(i);
  for (double v : lane) total += v;
  return total;
}

// The two sums of the backward: sum(dy) and sum(dy * (x - m)).
template <typename T>
void lane_sums(const T* dy, const T* x, double m, std::int64_t n, double& sum_dy, double& sum_dy_xc) {
  double a[kLanes] = {}, b[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const double g = dy[i + l];
      a[l] += g;
      b[l] += g * (static_cast<double>(x[i + l]) - m);
    }
  for (; i < n; ++i) {
    sum_dy += dy[i];
    sum_dy_xc += static_cast<double>(dy[i]) * (static_cast<double>(x[i]) - m);
  }
  for (int l = 0; l < kLanes; ++l) {
    sum_dy += a[l];
    sum_dy_xc += b[l];
  }
}

// Batch mean and (biased) variance of channel c, two passes.
template <typename T>
void channel_moments(const T* in, const Planes& p, std::int64_t c, double& mean, double& var) {
  double m = 0;
  for (std::int64_t n = 0; n < p.batch; ++n) {
    const T* src = in + (n * p.channels + c) * p.plane;
    m += lane_sum(p.plane, [src](std::int64_t i) { return static_cast<double>(src[i]); });
  }
  m /= static_cast<double>(p.per_channel());
  double v = 0;
  for (std::int64_t n = 0; n < p.batch; ++n) {
    const T* src = in + (n * p.channels + c) * p.plane;
    v += lane_sum(p.plane, [src, m](std::int64_t i) {
      const double d = static_cast<double>(src[i]) - m;
      return d * d;
    });
  }
  mean = m;
  var = v / static_cast<double>(p.per_channel());
}

template <typename T>
void forward_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& running_mean, Tensor& running_var,
                 const BatchNorm2dOptions& o, bool training, Tensor& y, Tensor& mean, Tensor& invstd) {
  const Planes p(x.shape());
  const T* in = x.data<T>();
  T* out = y.data<T>();
  T* rm = running_mean.data<T>();
  T* rv = running_var.data<T>();
  const double count = static_cast<double>(p.per_channel());
  parallel_for(p.channels, p.grain(), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t c = first; c < last; ++c) {
      double m = 0, var = 0;
      if (training) {
        channel_moments(in, p, c, m, var);
        detail::batch_norm::update_running(rm[c], rv[c], m, var, count, o.momentum);
      } else {
        m = rm[c];
        var = rv[c];
      }
      const double is = detail::batch_norm::inverse_std(var, o.eps);
      mean.data<T>()[c] = static_cast<T>(m);
      invstd.data<T>()[c] = static_cast<T>(is);
      T scale, shift;
      detail::batch_norm::affine(m, is, weight.data<T>()[c], bias.data<T>()[c], scale, shift);
      for (std::int64_t n = 0; n < p.batch; ++n) {
        const std::int64_t base = (n * p.channels + c) * p.plane;
        for (std::int64_t i = 0; i < p.plane; ++i) out[base + i] = in[base + i] * scale + shift;
      }
    }
  });
}

// batch_statistics: the mean and invstd came from this batch, so they depend on x too.
template <typename T>
void backward_cpu(const Tensor& x, const Tensor& grad_y, const Tensor& weight, const Tensor& mean,
                  const Tensor& invstd, bool batch_statistics, Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias) {
  const Planes p(x.shape());
  const T* in = x.data<T>();
  const T* dy = grad_y.data<T>();
  T* dx = grad_x.data<T>();
  const double count = static_cast<double>(p.per_channel());
  parallel_for(p.channels, p.grain(), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t c = first; c < last; ++c) {
      const double m = mean.data<T>()[c], is = invstd.data<T>()[c], w = weight.data<T>()[c];
      double sum_dy = 0, sum_dy_xhat = 0;
      for (std::int64_t n = 0; n < p.batch; ++n) {
        const std::int64_t base = (n * p.channels + c) * p.plane;
        lane_sums(dy + base, in + base, m, p.plane, sum_dy, sum_dy_xhat);
      }
      sum_dy_xhat *= is;
      const double mean_dy = batch_statistics ? sum_dy / count : 0.0;
      const double mean_dy_xhat = batch_statistics ? sum_dy_xhat / count : 0.0;
      for (std::int64_t n = 0; n < p.batch; ++n) {
        const std::int64_t base = (n * p.channels + c) * p.plane;
        for (std::int64_t i = 0; i < p.plane; ++i)
          dx[base + i] =
              detail::batch_norm::input_gradient(in[base + i], dy[base + i], m, is, w, mean_dy, mean_dy_xhat);
      }
      grad_weight.data<T>()[c] += static_cast<T>(sum_dy_xhat);
      grad_bias.data<T>()[c] += static_cast<T>(sum_dy);
    }
  });
}

}  // namespace

BatchNorm2d::BatchNorm2d(const BatchNorm2dOptions& options) : options_(options) {
  LOOM_CHECK(options_.channels > 0, "BatchNorm2d: channels must be positive, got ", options_.channels);
  LOOM_CHECK(options_.eps > 0 && options_.momentum >= 0 && options_.momentum <= 1,
             "BatchNorm2d: eps must be positive and momentum in [0, 1]");
  const Shape shape{options_.channels};
  weight_ = make_parameter("weight", shape, Init::ones());
  bias_ = make_parameter("bias", shape, Init::zeros());
  running_mean_ = make_parameter("running_mean", shape, Init::zeros(), false);
  running_var_ = make_parameter("running_var", shape, Init::ones(), false);
}

std::vector<Parameter*> BatchNorm2d::local_parameters() { return {&weight_, &bias_, &running_mean_, &running_var_}; }

Tensor BatchNorm2d::forward_tensor(const Tensor& x, Context& ctx) {
  const Shape s = detail::blocked::logical_shape(x.shape());  // x may be blocked (blocked_layout.h)
  LOOM_CHECK(s.rank() == 4 && s[1] == options_.channels, describe(), ": input shape ", x.shape().str(),
             " does not match weight shape ", weight_.value.shape().str(), " (expected [N, ", options_.channels,
             ", H, W])");
  detail::check_like(*this, "input", x, weight_.value, "weight");
  const bool training = ctx.training;
  LOOM_CHECK(!training || s[0] * s[2] * s[3] > 1, describe(),
             ": training needs more than one value per channel, got input shape ", x.shape().str());

  MemoryCategoryScope scope(MemoryCategory::activations);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({options_.channels}, x.dtype(), x.device());
  Tensor invstd = Tensor::empty({options_.channels}, x.dtype(), x.device());
  if (x.device().is_cuda()) {
    if (training) {
      cuda_kernels::batch_norm_forward_training(x, weight_.value, bias_.value, running_mean_.value,
                                                running_var_.value, options_.momentum, options_.eps, y, mean, invstd);
    } else {
      cuda_kernels::batch_norm_forward_inference(x, weight_.value, bias_.value, running_mean_.value,
                                                 running_var_.value, options_.eps, y);
      mean.copy_from(running_mean_.value);
      cuda_kernels::inverse_std(running_var_.value, options_.eps, invstd);
    }
  } else if (detail::blocked::is_blocked(x)) {
    detail::batch_norm::forward_blocked(x, weight_.value, bias_.value, running_mean_.value, running_var_.value,
                                        options_.eps, options_.momentum, training, y, mean, invstd);
  } else {
    dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
      forward_cpu<T>(x, weight_.value, bias_.value, running_mean_.value, running_var_.value, options_, training, y,
                     mean, invstd);
    });
  }
  ctx.save("input", x);
  ctx.save(training ? "batch_mean" : "fixed_mean", mean);
  ctx.save("invstd", invstd);
  return y;
}

Tensor BatchNorm2d::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  const Tensor x = ctx.get("input");
  detail::check_same_shape(*this, "output gradient", grad_y, x.shape());
  detail::check_like(*this, "output gradient", grad_y, weight_.value, "weight");
  const bool batch_statistics = ctx.has("batch_mean");
  const Tensor mean = ctx.get(batch_statistics ? "batch_mean" : "fixed_mean");
  const Tensor invstd = ctx.get("invstd");
  Tensor grad_x = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device().is_cuda()) {
    if (batch_statistics)
      cuda_kernels::batch_norm_backward_training(x, grad_y, weight_.value, mean, invstd, options_.eps, grad_x,
                                                 weight_.grad, bias_.grad);
    else
      cuda_kernels::batch_norm_backward_inference(x, grad_y, weight_.value, mean, invstd, grad_x, weight_.grad,
                                                  bias_.grad);
  } else if (detail::blocked::is_blocked(x)) {
    detail::batch_norm::backward_blocked(x, grad_y, weight_.value, mean, invstd, batch_statistics, grad_x,
                                         weight_.grad, bias_.grad);
  } else {
    dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
      backward_cpu<T>(x, grad_y, weight_.value, mean, invstd, batch_statistics, grad_x, weight_.grad, bias_.grad);
    });
  }
  ctx.clear();
  return grad_x;
}

std::vector<Shape> BatchNorm2d::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1 && input_shapes[0].rank() == 4 && input_shapes[0][1] == options_.channels,
             "BatchNorm2d: expected one input shape [N, ", options_.channels, ", H, W]");
  return {input_shapes[0]};
}

double BatchNorm2d::flops(const std::vector<Shape>& input_shapes) const {
  return 4.0 * static_cast<double>(output_shapes(input_shapes)[0].numel());
}

std::size_t BatchNorm2d::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return detail::f32_bytes(output_shapes(input_shapes)[0]) + 2 * 4 * static_cast<std::size_t>(options_.channels);
}

}  // namespace loom
