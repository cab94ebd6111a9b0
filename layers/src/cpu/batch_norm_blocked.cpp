// BatchNorm2d on blocked activations (see batch_norm_blocked.h).
#include "cpu/batch_norm_blocked.h"

#include <algorithm>

#include <loom/base/error.h>
#include <loom/core/parallel.h>

#include "cpu/batch_norm_math.h"
#include "cpu/blocked_layout.h"

namespace loom::detail::batch_norm {

namespace {

constexpr std::int64_t L = blocked::kLanes;

// [N, C/16, H, W, 16]: blocks of 16 channels, each (n, block) a run of plane * 16 values.
struct Blocks {
  std::int64_t batch, blocks, plane;
  explicit Blocks(const Shape& s) : batch(s[0]), blocks(s[1]), plane(s[2] * s[3]) {}
  double per_channel() const { return static_cast<double>(batch * plane); }
  std::int64_t run(std::int64_t n, std::int64_t b) const { return (n * blocks + b) * plane * L; }
  std::int64_t grain() const { return std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(1, batch * plane * L)); }
};

// Per lane: sum over the block's values of f(value, lane).
template <typename F>
void lane_sums(const float* x, const Blocks& p, std::int64_t b, double (&sum)[L], F f) {
  for (std::int64_t l = 0; l < L; ++l) sum[l] = 0;
  for (std::int64_t n = 0; n < p.batch; ++n) {
    const float* run = x + p.run(n, b);
    for (std::int64_t i = 0; i < p.plane; ++i)
      for (std::int64_t l = 0; l < L; ++l) sum[l] += f(run[i * L + l], l);
  }
}

// Statistics of block b's channels: this batch's (updating the running ones) or the running ones.
void block_statistics(const float* x, const Blocks& p, std::int64_t b, double eps, double momentum, bool training,
                      float* rm, float* rv, double (&m)[L], double (&is)[L]) {
  double var[L];
  if (training) {
    lane_sums(x, p, b, m, [](float v, std::int64_t) { return static_cast<double>(v); });
    for (double& v : m) v /= p.per_channel();
    lane_sums(x, p, b, var, [&m](float v, std::int64_t l) {
      const double d = static_cast<double>(v) - m[l];
      return d * d;
    });
    const double count = p.per_channel();
    for (std::int64_t l = 0; l < L; ++l) {
      const std::int64_t c = b * L + l;
      var[l] /= count;
      update_running(rm[c], rv[c], m[l], var[l], count, momentum);
    }
  } else {
    for (std::int64_t l = 0; l < L; ++l) {
      m[l] = rm[b * L + l];
      var[l] = rv[b * L + l];
    }
  }
  for (std::int64_t l = 0; l < L; ++l) is[l] = inverse_std(var[l], eps);
}

void check(const Tensor& x, const char* what) {
  LOOM_CHECK(blocked::is_blocked(x) && x.dtype() == DType::f32 && !x.device().is_cuda(), "BatchNorm2d: the ", what,
             " of the blocked path must be a blocked f32 host tensor, got ", x.shape().str());
}

}  // namespace

void forward_blocked(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& running_mean,
                     Tensor& running_var, double eps, double momentum, bool training, Tensor& y, Tensor& mean,
                     Tensor& invstd) {
  check(x, "input");
  const Blocks p(x.shape());
  const float* in = x.data<float>();
  float* out = y.data<float>();
  parallel_for(p.blocks, p.grain(), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t b = first; b < last; ++b) {
      double m[L], is[L];
      block_statistics(in, p, b, eps, momentum, training, running_mean.data<float>(), running_var.data<float>(), m,
                       is);
      float scale[L], shift[L];
      for (std::int64_t l = 0; l < L; ++l) {
        const std::int64_t c = b * L + l;
        mean.data<float>()[c] = static_cast<float>(m[l]);
        invstd.data<float>()[c] = static_cast<float>(is[l]);
        affine(m[l], is[l], weight.data<float>()[c], bias.data<float>()[c], scale[l], shift[l]);
      }
      for (std::int64_t n = 0; n < p.batch; ++n) {
        const std::int64_t run = p.run(n, b);
        for (std::int64_t i = 0; i < p.plane; ++i)
          for (std::int64_t l = 0; l < L; ++l) out[run + i * L + l] = in[run + i * L + l] * scale[l] + shift[l];
      }
    }
  });
}

void backward_blocked(const Tensor& x, const Tensor& grad_y, const Tensor& weight, const Tensor& mean,
                      const Tensor& invstd, bool batch_statistics, Tensor& grad_x, Tensor& grad_weight,
                      Tensor& grad_bias) {
  check(x, "input");
  check(grad_y, "output gradient");
  const Blocks p(x.shape());
  const float* in = x.data<float>();
  const float* dy = grad_y.data<float>();
  float* dx = grad_x.data<float>();
  parallel_for(p.blocks, p.grain(), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t b = first; b < last; ++b) {
      double m[L], is[L], w[L], sum_dy[L] = {}, sum_dy_xhat[L] = {};
      for (std::int64_t l = 0; l < L; ++l) {
        m[l] = mean.data<float>()[b * L + l];
        is[l] = invstd.data<float>()[b * L + l];
        w[l] = weight.data<float>()[b * L + l];
      }
      for (std::int64_t n = 0; n < p.batch; ++n) {
        const std::int64_t run = p.run(n, b);
        for (std::int64_t i = 0; i < p.plane; ++i)
          for (std::int64_t l = 0; l < L; ++l) {
            const double g = dy[run + i * L + l];
            sum_dy[l] += g;
            sum_dy_xhat[l] += g * (static_cast<double>(in[run + i * L + l]) - m[l]);
          }
      }
      double mean_dy[L], mean_dy_xhat[L];
      for (std::int64_t l = 0; l < L; ++l) {
        sum_dy_xhat[l] *= is[l];
        mean_dy[l] = batch_statistics ? sum_dy[l] / p.per_channel() : 0.0;
        mean_dy_xhat[l] = batch_statistics ? sum_dy_xhat[l] / p.per_channel() : 0.0;
        grad_weight.data<float>()[b * L + l] += static_cast<float>(sum_dy_xhat[l]);
        grad_bias.data<float>()[b * L + l] += static_cast<float>(sum_dy[l]);
      }
      for (std::int64_t n = 0; n < p.batch; ++n) {
        const std::int64_t run = p.run(n, b);
        for (std::int64_t i = 0; i < p.plane; ++i)
          for (std::int64_t l = 0; l < L; ++l) {
            const std::int64_t k = run + i * L + l;
            dx[k] = input_gradient(in[k], dy[k], m[l], is[l], w[l], mean_dy[l], mean_dy_xhat[l]);
          }
      }
    }
  });
}

}  // namespace loom::detail::batch_norm
