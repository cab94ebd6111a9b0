// LayerNorm forward/backward: a row loop on the CPU (statistics in double), a kernel per row on CUDA.
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),  dxhat = dy * gamma
//   dgamma += sum_rows dy * xhat,  dbeta += sum_rows dy
#include <loom/layers/layer_norm.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <loom/core/parallel.h>

#include "cuda/kernels.h"
#include "layer_util.h"

namespace loom {

namespace {

template <typename T>
void cpu_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, std::int64_t rows,
                 std::int64_t n, double eps) {
  parallel_for(rows, std::max<std::int64_t>(1, 8192 / n), [&](std::int64_t first, std::int64_t last) {
  for (std::int64_t r = first; r < last; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    double sum = 0.0;
    for (std::int64_t j = 0; j < n; ++j) sum += xr[j];
    const double mu = sum / static_cast<double>(n);
    double squares = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double d = xr[j] - mu;
      squares += d * d;
    }
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
    const T m = static_cast<T>(mu), s = static_cast<T>(inv);
    if (gamma)
      for (std::int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * s * gamma[j] + beta[j];
    else
      for (std::int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * s;
    mean[r] = m;
    rstd[r] = s;
  }
  });
}

template <typename T>
void cpu_backward(const T* x, const T* gamma, const T* mean, const T* rstd, const T* g, T* dx, T* dgamma, T* dbeta,
                  std::int64_t rows, std::int64_t n) {
  parallel_for(rows, std::max<std::int64_t>(1, 8192 / n), [&](std::int64_t first, std::int64_t last) {
    std::vector<T> xhat(n), dxhat(n);
    for (std::int64_t r = first; r < last; ++r) {
      const T* xr = x + r * n;
      const T* gr = g + r * n;
      T* dxr = dx + r * n;
      double a = 0.0, b = 0.0;
      for (std::int64_t j = 0; j < n; ++j) {
        xhat[j] = (xr[j] - mean[r]) * rstd[r];
        dxhat[j] = gamma ? gr[j] * gamma[j] : gr[j];
        a += dxhat[j];
        b += static_cast<double>(dxhat[j]) * xhat[j];
      }
      const T ma = static_cast<T>(a / static_cast<double>(n)), mb = static_cast<T>(b / static_cast<double>(n));
      for (std::int64_t j = 0; j < n; ++j) dxr[j] = rstd[r] * (dxhat[j] - ma - xhat[j] * mb);
    }
  });
  if (!gamma) return;
  // Column sums over all rows, each thread owning a range of columns.
  parallel_for(n, 64, [&](std::int64_t first, std::int64_t last) {
    std::vector<double> sum_gamma(last - first, 0.0), sum_beta(last - first, 0.0);
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * n;
      const T* gr = g + r * n;
      for (std::int64_t j = first; j < last; ++j) {
        sum_gamma[j - first] += static_cast<double>(gr[j]) * ((xr[j] - mean[r]) * rstd[r]);
        sum_beta[j - first] += gr[j];
      }
    }
    for (std::int64_t j = first; j < last; ++j) {
      dgamma[j] += static_cast<T>(sum_gamma[j - first]);
      dbeta[j] += static_cast<T>(sum_beta[j - first]);
    }
  });
}

}  // namespace

LayerNorm::LayerNorm(std::int64_t dim, double eps, bool elementwise_affine)
    : dim_(dim), eps_(eps), affine_(elementwise_affine) {
  LOOM_CHECK(dim > 0, "LayerNorm: dim must be positive, got ", dim);
  if (affine_) {
    weight_ = make_parameter("weight", Shape{dim}, Init::ones());
    bias_ = make_parameter("bias", Shape{dim}, Init::zeros());
  }
}

std::vector<Parameter*> LayerNorm::local_parameters() {
  if (affine_) return {&weight_, &bias_};
  return {};
}

Tensor LayerNorm::forward_tensor(const Tensor& x, Context& ctx) {
  LOOM_CHECK(x.defined(), describe(), ": undefined input");
  if (affine_) {
    detail::check_last_dim(*this, "input", x, dim_, "weight", weight_.value.shape());
    detail::check_like(*this, "input", x, weight_.value, "weight");
  } else {
    LOOM_CHECK(x.rank() >= 1 && x.size(-1) == dim_, describe(), ": input shape ", x.shape().str(),
               " does not end in ", dim_);
  }
  const std::int64_t rows = x.numel() / dim_;
  Tensor y = detail::empty_like(x);
  Tensor mean = Tensor::empty(Shape{rows}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty(Shape{rows}, x.dtype(), x.device());
  if (x.device().is_cuda()) {
    cuda_kernels::layer_norm_forward(x, affine_ ? weight_.value : Tensor(), affine_ ? bias_.value : Tensor(), eps_, y,
                                     mean, rstd);
  } else {
    dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
      cpu_forward<T>(x.data<T>(), affine_ ? weight_.value.data<T>() : nullptr,
                     affine_ ? bias_.value.data<T>() : nullptr, y.data<T>(), mean.data<T>(), rstd.data<T>(), rows,
                     dim_, eps_);
    });
  }
  ctx.save("input", x);
  ctx.save("mean", mean);
  ctx.save("rstd", rstd);
  return y;
}

Tensor LayerNorm::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  const Tensor x = ctx.get("input"), mean = ctx.get("mean"), rstd = ctx.get("rstd");
  detail::check_same_shape(*this, "output gradient", grad_y, x.shape());
  detail::check_like(*this, "output gradient", grad_y, x, "input");
  const std::int64_t rows = x.numel() / dim_;
  Tensor grad_x = detail::empty_like(x);
  if (x.device().is_cuda()) {
    cuda_kernels::layer_norm_backward(x, affine_ ? weight_.value : Tensor(), mean, rstd, grad_y, grad_x,
                                      affine_ ? weight_.grad : Tensor(), affine_ ? bias_.grad : Tensor());
  } else {
    dispatch_floating(x.dtype(), describe(), [&]<typename T>(T) {
      cpu_backward<T>(x.data<T>(), affine_ ? weight_.value.data<T>() : nullptr, mean.data<T>(), rstd.data<T>(),
                      grad_y.data<T>(), grad_x.data<T>(), affine_ ? weight_.grad.data<T>() : nullptr,
                      affine_ ? bias_.grad.data<T>() : nullptr, rows, dim_);
    });
  }
  ctx.clear();
  return grad_x;
}

double LayerNorm::flops(const std::vector<Shape>& input_shapes) const {
  return 8.0 * static_cast<double>(input_shapes.at(0).numel());
}

std::size_t LayerNorm::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shape& s = input_shapes.at(0);
  return detail::f32_bytes(s) + 2 * static_cast<std::size_t>(s.numel() / dim_) * 4;
}

}  // namespace loom
