// Activations saved in 16 bits under mixed precision (layers/src/gemm_operand_storage.h): a Linear's
// input and attention's Q, K, V are only multiplied by the backward, whose GEMMs round them to the
// GemmOperandScope's type anyway, so under bf16 / f16 they are saved in that type. Counted exactly
// (the context's saved bytes and the memory ledger's activations), and the Linear's gradients are
// compared bit for bit with the same GEMMs called directly on the f32 input under the same scope.
#include <catch2/catch.hpp>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/layers/attention.h>
#include <loom/layers/linear.h>

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
