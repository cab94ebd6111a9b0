// Multi-head attention (self and cross, causal and padding masks) against PyTorch's
// nn.MultiheadAttention and finite differences; split backward; attention dropout masks.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/attention.h>

#include "expect.h"
#include "gradcheck.h"

using namespace loom;

namespace {

struct Case {
  bool cross, causal, padding, bias;
};

void compare_with_torch(const Case& c) {
  INFO("cross " << c.cross << " causal " << c.causal << " padding " << c.padding << " bias " << c.bias);
  const std::int64_t B = 3, T = 5, S = c.cross ? 7 : 5, E = 16, H = 4;
  MultiHeadAttention attn(E, H, c.cross, c.causal, 0.0, c.bias);
  attn.initialize(17, 1, "");
  Tensor x = test::random_tensor(Shape{B, T, E}, 31);
  Tensor memory = test::random_tensor(Shape{B, S, E}, 32);
  Tensor grad_y = test::random_tensor(Shape{B, T, E}, 33);
  // Padding: the last keys of some sequences (never all of a row's keys).
  std::vector<std::int64_t> pad(static_cast<std::size_t>(B * S), 0);
  pad[static_cast<std::size_t>(S - 1)] = 1;
  pad[static_cast<std::size_t>(2 * S - 1)] = pad[static_cast<std::size_t>(2 * S - 2)] = 1;
  Tensor mask = Tensor::from_vector(pad, Shape{B, S});
  TensorList inputs{x};
  if (c.cross) inputs.push_back(memory);
  if (c.padding) inputs.push_back(mask);
  Context ctx;
  Tensor y = attn.forward(inputs, ctx)[0];
  TensorList grads = attn.backward({grad_y}, ctx);
  REQUIRE(grads.size() == inputs.size());
  safetensors::NamedTensors in{{"x", x}, {"grad_y", grad_y}};
  if (c.cross) in.emplace_back("memory", memory);
  if (c.padding) in.emplace_back("key_padding_mask", mask);
  test::add_parameters(in, attn);
  auto ref = test::run_torch("attention", in,
                             {{"embed_dim", E}, {"heads", H}, {"cross", c.cross}, {"causal", c.causal}, {"bias", c.bias}});
  test::expect_close(ref, "y", y);
  test::expect_close(ref, "grad_x", grads[0]);
  if (c.cross) test::expect_close(ref, "grad_memory", grads[1]);
  test::expect_parameter_grads_close(ref, attn);
}

}  // namespace

TEST_CASE("self-attention matches PyTorch (plain, causal, padding, no bias)") {
  compare_with_torch({false, false, false, true});
  compare_with_torch({false, true, false, true});
  compare_with_torch({false, false, true, true});
  compare_with_torch({false, true, true, false});
}

TEST_CASE("cross-attention matches PyTorch (plain, padding)") {
  compare_with_torch({true, false, false, true});
  compare_with_torch({true, false, true, true});
}

TEST_CASE("attention passes the f64 gradient check, with dropout and split backward") {
  for (bool cross : {false, true}) {
    INFO("cross " << cross);
    MultiHeadAttention attn(8, 2, cross, !cross, 0.3);
    attn.initialize(3, 0, "attn");
    attn.to(DType::f64);
    TensorList inputs{test::random_tensor(Shape{2, 3, 8}, 41, -1, 1, DType::f64)};
    if (cross) inputs.push_back(test::random_tensor(Shape{2, 4, 8}, 42, -1, 1, DType::f64));
    inputs.push_back(Tensor::from_vector<std::int64_t>(cross ? std::vector<std::int64_t>{0, 0, 0, 1, 0, 0, 0, 0}
                                                             : std::vector<std::int64_t>{0, 0, 1, 0, 0, 0},
                                                       Shape{2, cross ? 4 : 3}));
    test::GradCheckOptions options;
    options.max_elements = 24;
    auto report = test::gradcheck(attn, inputs, options);
    INFO(report.str());
    CHECK(report.ok);
  }
}

TEST_CASE("attention dropout does not depend on how the batch is split") {
  MultiHeadAttention attn(8, 2, false, false, 0.5);
  attn.initialize(3, 4, "attn");
  Tensor x = test::random_tensor(Shape{4, 3, 8}, 43);
  Context whole;
  whole.step = 9;
  const auto y = attn.forward({x}, whole)[0].to_double_vector();
  std::vector<double> parts;
  for (std::int64_t begin : {0, 1}) {
    const std::int64_t end = begin == 0 ? 1 : 4;
    Context ctx;
    ctx.step = 9;
    ctx.first_sample = begin;
    const auto part = attn.forward({x.slice(begin, end)}, ctx)[0].to_double_vector();
    parts.insert(parts.end(), part.begin(), part.end());
  }
  REQUIRE(parts.size() == y.size());
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(parts[i] == Approx(y[i]).margin(1e-6));
  Context eval;
  eval.training = false;
  CHECK(ops::max_abs_error(attn.forward({x}, eval)[0], Tensor::from_vector(y, Shape{4, 3, 8}).to(DType::f32)) > 1e-3);
}
