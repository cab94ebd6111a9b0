// Activations saved in 16 bits under mixed precision (layers/src/gemm_operand_storage.h): a Linear's
// input and attention's Q, K, V are only multiplied by the backward, whose GEMMs round them to the
// GemmOperandScope's type anyway, so under bf16 / f16 they are saved in that type. Counted exactly
// (the context's saved bytes and the memory ledger's activations), and the Linear's gradients are
// compared bit for bit with the same GEMMs called directly on the f32 input under the same scope.
//
// A ReLU on the CPU keeps one bit per element under a 16-bit scope (layers/src/cpu/relu_mask.h), so
// that a convolution or Linear after it holds its output alone and saves it rounded; a Conv2d saves
// its input in 16 bits where its CPU path's weight gradient rounds it anyway (im2col; oneDNN on bf16
// kernels), not where it computes in f32 (Winograd; oneDNN without bf16 kernels): checked by the
// bytes and by gradients equal bit for bit to the same layer saving the f32 input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/layers/activation.h>
#include <loom/layers/attention.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/linear.h>
#include <loom/layers/sequential.h>

#include "expect.h"
#include "torch_reference.h"

using namespace loom;

namespace {
std::int64_t live_activations() { return memory_stats().live(MemoryCategory::activations); }

// A copy of x in a list that holds the only reference to it (a braced list would hold two).
TensorList sole(const Tensor& x) {
  TensorList inputs;
  inputs.push_back(x.clone());
  return inputs;
}
}  // namespace

TEST_CASE("Linear saves its input in bf16 / f16 under a rounding GemmOperandScope, exactly half the bytes",
          "[layers][bf16][f16][memory]") {
  const std::int64_t rows = 3 * 7, in = 32, out = 16;
  for (DType operands : {DType::f32, DType::bf16, DType::f16}) {
    INFO(dtype_name(operands));
    Linear linear(in, out, true);
    linear.initialize(5, 0, "fc");
    const Tensor x = test::random_tensor(Shape{3, 7, in}, 1);
    const Tensor grad_y = test::random_tensor(Shape{3, 7, out}, 2);
    const MemoryCategoryScope charged(MemoryCategory::activations);
    const ops::GemmOperandScope math(operands);
    Context ctx;
    const std::int64_t before = live_activations();
    // The input list holds the only reference to its tensor, as a chain's previous output does.
    const Tensor y = linear.forward(sole(x), ctx)[0];
    const std::int64_t element = operands == DType::f32 ? 4 : 2;
    CHECK(ctx.saved_bytes() == static_cast<std::size_t>(rows * in * element));
    // New activations: the output, and the 16-bit copy of the input (f32: the input itself, freed
    // with the list in the test, kept by the context: rows * in * 4 either way is what stays).
    CHECK(live_activations() - before == rows * out * 4 + rows * in * element);
    const Tensor grad_x = linear.backward({grad_y}, ctx)[0];
    CHECK(ctx.saved_bytes() == 0);

    // The same GEMMs on the f32 tensors under the same scope: equal bit for bit.
    const Tensor g2 = grad_y.flatten_to_2d(-1);
    Tensor want_grad_x = Tensor::zeros(Shape{rows, in}), want_grad_w = Tensor::zeros(Shape{out, in});
    ops::gemm(g2, false, linear.weight().value, false, want_grad_x);
    ops::gemm(g2, true, x.flatten_to_2d(-1), false, want_grad_w);
    CHECK(grad_x.flatten_to_2d(-1).to_double_vector() == want_grad_x.to_double_vector());
    CHECK(linear.weight().grad.to_double_vector() == want_grad_w.to_double_vector());
  }
}

TEST_CASE("Linear saves an input that something else holds as it is: a copy would add bytes", "[layers][bf16][memory]") {
  Linear linear(32, 16, true);
  linear.initialize(5, 0, "fc");
  const Tensor x = test::random_tensor(Shape{21, 32}, 1);  // held here too, as a ReLU holds its saved output
  const MemoryCategoryScope charged(MemoryCategory::activations);
  const ops::GemmOperandScope math(DType::bf16);
  Context ctx;
  const std::int64_t before = live_activations();
  const Tensor y = linear.forward({x}, ctx)[0];
  CHECK(ctx.saved_bytes() == 21 * 32 * 4);
  CHECK(live_activations() - before == 21 * 16 * 4);  // the output only
}

TEST_CASE("attention saves Q, K, V (and its projections' inputs) in bf16 under GemmOperandScope(bf16)",
          "[layers][bf16][memory]") {
  const std::int64_t B = 2, T = 5, E = 16, H = 2;
  std::size_t saved[2] = {0, 0};
  std::vector<double> grads[2];
  for (int narrow = 0; narrow < 2; ++narrow) {
    MultiHeadAttention attention(E, H, false, true);
    attention.initialize(9, 0, "attn");
    const Tensor x = test::random_tensor(Shape{B, T, E}, 3);
    const ops::GemmOperandScope math(narrow ? DType::bf16 : DType::f32);
    Context ctx;
    attention.forward(sole(x), ctx);
    saved[narrow] = ctx.saved_bytes();
    grads[narrow] = attention.backward({test::random_tensor(Shape{B, T, E}, 4)}, ctx)[0].to_double_vector();
  }
  // f32: the input (saved by the qkv projection), the merged heads (the output projection's input),
  // Q, K, V and the probabilities [B*H, T, T]; bf16: all but the probabilities in half the bytes.
  const std::size_t multiplied = (B * T * E) * 2 + 3 * (B * T * E), probs = B * H * T * T;
  CHECK(saved[0] == (multiplied + probs) * 4);
  CHECK(saved[1] == multiplied * 2 + probs * 4);
  double worst = 0;
  for (std::size_t i = 0; i < grads[0].size(); ++i) worst = std::max(worst, std::abs(grads[0][i] - grads[1][i]));
  CHECK(worst > 0);      // rounding happened
  CHECK(worst < 0.05);   // bf16 operands: a few units of 2^-8 relative on gradients of magnitude ~1
}

TEST_CASE("ReLU keeps one bit per element under a 16-bit scope and computes the same gradient",
          "[layers][bf16][f16][memory]") {
  for (std::int64_t n : {std::int64_t{105}, std::int64_t{40000}}) {  // a partial last word; several threads' chunks
    INFO("n = " << n);
    std::vector<float> values = test::random_tensor(Shape{n}, 7).to_float_vector();
    values[0] = 1e-40f;  // a positive subnormal: rounds to a bf16 / f16 zero, its bit must be set
    values[1] = -0.0f;
    values[2] = 0.0f;
    values[3] = std::numeric_limits<float>::quiet_NaN();
    const Tensor grad_y = test::random_tensor(Shape{n}, 8);
    std::vector<double> grads[3];
    std::size_t saved[3];
    const DType scopes[3] = {DType::f32, DType::bf16, DType::f16};
    for (int i = 0; i < 3; ++i) {
      ReLU relu;
      const ops::GemmOperandScope math(scopes[i]);
      Context ctx;
      relu.forward(sole(Tensor::from_vector(values, Shape{n})), ctx);
      saved[i] = ctx.saved_bytes();
      grads[i] = relu.backward({grad_y}, ctx)[0].to_double_vector();
    }
    CHECK(saved[0] == static_cast<std::size_t>(n) * 4);                 // f32: the output
    CHECK(saved[1] == static_cast<std::size_t>((n + 31) / 32) * 4);     // one 32-bit word per 32 elements
    CHECK(saved[2] == saved[1]);
    CHECK(grads[1] == grads[0]);
    CHECK(grads[2] == grads[0]);
    CHECK(grads[1][0] == grad_y.to_double_vector()[0]);
    CHECK(grads[1][1] == 0.0);
    CHECK(grads[1][3] == 0.0);
  }
}

namespace {
// One Conv2d's forward and backward under `operands`, with the input held only by the layer's
// input list (`sole`) or also by the caller; the saved bytes and the gradients (x, then weight).
struct ConvRun {
  std::size_t saved = 0;
  std::vector<double> grads;
};

ConvRun run_conv(DType operands, bool sole_input) {
  Conv2d conv({.in_channels = 16, .out_channels = 8, .kernel = 3, .padding = 1, .bias = true});
  conv.initialize(3, 0, "conv");
  const Tensor x = test::random_tensor(Shape{2, 16, 6, 5}, 1);
  const ops::GemmOperandScope math(operands);
  Context ctx;
  if (sole_input)
    conv.forward(sole(x), ctx);
  else
    conv.forward({x}, ctx);
  ConvRun run{ctx.saved_bytes(), conv.backward({test::random_tensor(Shape{2, 8, 6, 5}, 2)}, ctx)[0].to_double_vector()};
  for (double v : conv.weight().grad.to_double_vector()) run.grads.push_back(v);
  return run;
}
}  // namespace

TEST_CASE("Conv2d saves its input in 16 bits where its path rounds it, with the same gradients",
          "[layers][conv][bf16][memory]") {
  const std::size_t elements = 2 * 16 * 6 * 5;
  struct Case {
    const char* path;
    DType operands;
    bool rounds;
  };
  const bool onednn_bf16 = [] {
    setenv("LOOM_CONV_PATH", "onednn", 1);
    Conv2d probe({.in_channels = 16, .out_channels = 8, .kernel = 3, .padding = 1});
    const bool onednn = probe.cpu_path(DType::f32) == "onednn";
    unsetenv("LOOM_CONV_PATH");
    return onednn && ops::cpu_bf16_kernels();
  }();
  if (!onednn_bf16) WARN("no oneDNN bf16 kernels here: the oneDNN path computes in f32 and must save f32");
  for (const Case& c : {Case{"im2col", DType::bf16, true}, Case{"im2col", DType::f16, true},
                        Case{"winograd", DType::bf16, false}, Case{"onednn", DType::bf16, onednn_bf16},
                        Case{"onednn", DType::f16, false}}) {
    INFO(c.path << " under " << dtype_name(c.operands));
    setenv("LOOM_CONV_PATH", c.path, 1);
    const ConvRun narrowed = run_conv(c.operands, true), held = run_conv(c.operands, false);
    unsetenv("LOOM_CONV_PATH");
    CHECK(held.saved == elements * 4);  // something else holds x: a copy would add bytes
    CHECK(narrowed.saved == elements * (c.rounds ? 2 : 4));
    CHECK(narrowed.grads == held.grads);
  }
}

TEST_CASE("conv, ReLU, conv under bf16 keeps 16-bit inputs and a bit mask: counted exactly", "[layers][bf16][memory]") {
  setenv("LOOM_CONV_PATH", "im2col", 1);  // a path that rounds on every CPU
  const std::int64_t n = 2, c = 8, h = 7, w = 6, elements = n * c * h * w;
  std::size_t saved[2];
  std::vector<double> grads[2];
  for (int narrow = 0; narrow < 2; ++narrow) {
    Sequential block;
    block.add(std::make_unique<Conv2d>(Conv2dOptions{.in_channels = c, .out_channels = c, .kernel = 3, .padding = 1}));
    block.add(std::make_unique<ReLU>());
    block.add(std::make_unique<Conv2d>(Conv2dOptions{.in_channels = c, .out_channels = c, .kernel = 3, .padding = 1}));
    block.initialize(11, 0, "block");
    const ops::GemmOperandScope math(narrow ? DType::bf16 : DType::f32);
    Context ctx;
    block.forward(sole(test::random_tensor(Shape{n, c, h, w}, 5)), ctx);
    saved[narrow] = ctx.saved_bytes();
    grads[narrow] = block.backward({test::random_tensor(Shape{n, c, h, w}, 6)}, ctx)[0].to_double_vector();
  }
  unsetenv("LOOM_CONV_PATH");
  // f32: both inputs (the second is the ReLU's output, saved once for both); bf16: both inputs in
  // 16 bits and the ReLU's mask, 0.53x.
  CHECK(saved[0] == static_cast<std::size_t>(elements) * 4 * 2);
  CHECK(saved[1] == static_cast<std::size_t>(elements) * 2 * 2 + static_cast<std::size_t>((elements + 31) / 32) * 4);
  double worst = 0;
  for (std::size_t i = 0; i < grads[0].size(); ++i) worst = std::max(worst, std::abs(grads[0][i] - grads[1][i]));
  CHECK(worst > 0);     // bf16 rounding happened
  CHECK(worst < 0.05);
}
