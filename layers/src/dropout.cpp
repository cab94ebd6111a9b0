// Dropout with partition-independent masks (see dropout.h): one fused pass (mask and scale) on the
// CPU from vectorised Philox tiles, and a CUDA kernel; both draw exactly rng::bernoulli's stream.
#include <loom/layers/dropout.h>

#include <cmath>

#include <loom/core/parallel.h>
#include <loom/core/philox.h>
#include <loom/core/rng.h>

#include "cuda/kernels.h"
#include "layer_util.h"

namespace loom {

namespace {

// result[j] = in[j] * scale where words[j] < limit, else 0.
template <typename T>
void mask_and_scale(const T* __restrict in, const std::uint32_t* __restrict words, std::uint64_t count,
                    std::uint64_t limit, T scale, T* __restrict result) {
  for (std::uint64_t j = 0; j < count; ++j) {
    const T scaled = in[j] * scale;  // loaded unconditionally so that the loop vectorises
    result[j] = static_cast<std::uint64_t>(words[j]) < limit ? scaled : T(0);
  }
}

// Words come from philox::for_word_runs (vectorised tiles); element i uses word first + i of the stream.
template <typename T>
void cpu_dropout(const T* x, T* out, std::int64_t n, std::uint64_t seed, std::uint64_t key, std::uint64_t first,
                 float keep, T scale) {
  // philox::bernoulli keeps a word w when (w + 0.5) / 2^32 < keep; for integer w that is
  // w < ceil(keep * 2^32 - 0.5), exact in double, so the loop compares integers.
  const auto limit = static_cast<std::uint64_t>(std::ceil(static_cast<double>(keep) * 4294967296.0 - 0.5));
  parallel_for(n, 1 << 14, [=](std::int64_t begin, std::int64_t end) {
    const T* in = x + begin;
    T* result = out + begin;
    philox::for_word_runs(seed, key, first + static_cast<std::uint64_t>(begin), static_cast<std::uint64_t>(end - begin),
                          [&](std::uint64_t offset, const std::uint32_t* words, std::uint64_t count) {
                            mask_and_scale(in + offset, words, count, limit, scale, result + offset);
                          });
  });
}

}  // namespace

void dropout_apply(const Tensor& x, Tensor& out, double p, std::uint64_t seed, std::uint64_t key,
                   std::int64_t first_sample) {
  const Shape& shape = x.shape();
  const std::int64_t per_sample = shape.rank() >= 1 && shape[0] > 0 ? shape.numel() / shape[0] : shape.numel();
  const auto first = static_cast<std::uint64_t>(first_sample * per_sample);
  const float keep = static_cast<float>(1.0 - p);
  const double scale = 1.0 / (1.0 - p);
  if (x.device().is_cuda()) return cuda_kernels::dropout_apply(x, out, seed, key, first, keep, scale);
  dispatch_floating(x.dtype(), "dropout", [&]<typename T>(T) {
    cpu_dropout<T>(x.data<T>(), out.data<T>(), x.numel(), seed, key, first, keep, static_cast<T>(scale));
  });
}

Dropout::Dropout(double p) : p_(p) {
  LOOM_CHECK(p >= 0.0 && p < 1.0, "Dropout: p must be in [0, 1), got ", p);
}

Tensor Dropout::apply_mask(const Tensor& x, const Context& ctx) const {
  const std::uint64_t key = rng::stream_key(name(), static_cast<std::uint64_t>(block_index()), ctx.step);
  Tensor out = detail::empty_like(x);
  dropout_apply(x, out, p_, ctx.seed, key, ctx.first_sample);
  return out;
}

Tensor Dropout::forward_tensor(const Tensor& x, Context& ctx) {
  LOOM_CHECK(x.defined(), describe(), ": undefined input");
  ctx.save_shape("input", x.shape());
  if (!ctx.training || p_ == 0.0) return x;
  return apply_mask(x, ctx);
}

Tensor Dropout::backward_input_tensor(const Tensor& grad_y, Context& ctx) {
  detail::check_same_shape(*this, "output gradient", grad_y, ctx.get_shape("input"));
  Tensor grad_x = (!ctx.training || p_ == 0.0) ? grad_y : apply_mask(grad_y, ctx);
  ctx.clear();
  return grad_x;
}

double Dropout::flops(const std::vector<Shape>& input_shapes) const {
  return 2.0 * static_cast<double>(input_shapes.at(0).numel());
}

}  // namespace loom
