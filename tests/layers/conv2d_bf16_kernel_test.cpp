// Conv2d on oneDNN's bf16 kernels under GemmOperandScope(bf16) (layers/src/cpu/onednn_conv.h): the
// forward, input gradient and weight gradient against a direct convolution in double of the same
// bf16-rounded operands. Skips the whole executable (exit 77) where the CPU lacks AVX-512 BF16 or
// loom was built without oneDNN; there Conv2d stays f32 under mixed precision (conv2d_test.cpp).
//
// Tolerance: products of bf16 values are exact in f32; only the f32 sums' order and rounding differ,
// within (K + 2)·2^-24·Σ|terms| per element for K terms (recursive summation's bound; blocked orders
// are tighter), K = C·kh·kw (forward), O·kh·kw (input gradient), N·H'·W' (weight gradient).
#include <catch2/catch.hpp>

#include <cmath>

#include <loom/core/ops.h>
#include <loom/layers/conv2d.h>

#include "bf16_kernels.h"
#include "torch_reference.h"

using namespace loom;

namespace {

const test::SkipWithoutBf16Kernels skip_without_bf16_kernels_at_start;

// Sums (value, sum of |terms|) in double, for a stride-1 convolution with symmetric padding p.
struct Sums {
  std::vector<double> value, size;
  explicit Sums(std::size_t n) : value(n, 0), size(n, 0) {}
  void add(std::size_t i, double term) {
    value[i] += term;
    size[i] += std::abs(term);
  }
};

double worst_against_bound(const std::vector<double>& got, const Sums& want, double terms) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want.value[i]) / ((terms + 2) * std::ldexp(want.size[i], -24) + 1e-30));
  return worst;
}

}  // namespace

TEST_CASE("Conv2d on oneDNN's bf16 kernels equals the double convolution of the bf16-rounded operands",
          "[layers][conv][bf16]") {
  setenv("LOOM_CONV_PATH", "onednn", 1);
  const long N = 2, C = 16, O = 24, H = 9, W = 7, K = 3, P = 1;  // stride 1, so H' = H, W' = W
  Conv2d conv({.in_channels = C, .out_channels = O, .kernel = K, .padding = P, .bias = false});
  conv.initialize(4, 0, "conv");
  REQUIRE(conv.cpu_path(DType::f32) == "onednn");
  const Tensor x = test::random_tensor(Shape{N, C, H, W}, 1);
  const Tensor grad_y = test::random_tensor(Shape{N, O, H, W}, 2);
  Tensor y, grad_x;
  {
    const ops::GemmOperandScope math(DType::bf16);
    Context ctx;
    y = conv.forward({x}, ctx)[0];
    grad_x = conv.backward({grad_y}, ctx)[0];
  }
  const std::vector<double> rx = test::bf16_rounded(x), rw = test::bf16_rounded(conv.weight().value), rg = test::bf16_rounded(grad_y);
  Sums fwd(N * O * H * W), dx(N * C * H * W), dw(O * C * K * K);
  for (long n = 0; n < N; ++n)
    for (long o = 0; o < O; ++o)
      for (long h = 0; h < H; ++h)
        for (long w = 0; w < W; ++w)
          for (long c = 0; c < C; ++c)
            for (long i = 0; i < K; ++i)
              for (long j = 0; j < K; ++j) {
                const long hi = h + i - P, wj = w + j - P;
                if (hi < 0 || hi >= H || wj < 0 || wj >= W) continue;
                const long xi = ((n * C + c) * H + hi) * W + wj, wi = ((o * C + c) * K + i) * K + j;
                const long yi = ((n * O + o) * H + h) * W + w;
                fwd.add(yi, rx[xi] * rw[wi]);
                dx.add(xi, rg[yi] * rw[wi]);
                dw.add(wi, rg[yi] * rx[xi]);
              }
  CHECK(worst_against_bound(y.to_double_vector(), fwd, C * K * K) <= 1);
  CHECK(worst_against_bound(grad_x.to_double_vector(), dx, O * K * K) <= 1);
  CHECK(worst_against_bound(conv.weight().grad.to_double_vector(), dw, N * H * W) <= 1);
  unsetenv("LOOM_CONV_PATH");
}
