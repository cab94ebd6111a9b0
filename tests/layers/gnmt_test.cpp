// GNMT blocks and their Bahdanau attention: f64 finite differences (padding masks and
// passed-through tensors included; the split backward agrees with the full one), and PyTorch
// 1.13 fp32 references of the MLPerf/NVIDIA GNMT math for outputs and every gradient.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/gnmt.h>

#include "check_close.h"
#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;
using test::check_close;

namespace {

// [N, T] mask with the last `padded[n]` positions of row n marked (1 = padded).
Tensor padding_mask(const std::vector<std::int64_t>& padded, std::int64_t length, DType dtype) {
  std::vector<double> values;
  for (std::int64_t n : padded)
    for (std::int64_t t = 0; t < length; ++t) values.push_back(t >= length - n ? 1.0 : 0.0);
  return Tensor::from_vector(values, {static_cast<std::int64_t>(padded.size()), length}).to(dtype);
}

// Runs the block in fp32 and the PyTorch reference on the same inputs, weights and output
// gradients; compares every output and gradient.
void compare_with_torch(Layer& block, const TensorList& inputs, nlohmann::json config) {
  Context ctx;
  const TensorList outputs = block.forward(inputs, ctx);
  TensorList grads;
  for (std::size_t k = 0; k < outputs.size(); ++k) grads.push_back(test::random_tensor(outputs[k].shape(), 300 + k));
  const TensorList grad_inputs = block.backward(grads, ctx);
  safetensors::NamedTensors exchange;
  for (std::size_t k = 0; k < inputs.size(); ++k) exchange.emplace_back("in_" + std::to_string(k), inputs[k]);
  for (std::size_t k = 0; k < grads.size(); ++k) exchange.emplace_back("grad_" + std::to_string(k), grads[k]);
  for (const NamedParameter& p : block.parameters()) exchange.emplace_back(p.name, p.parameter->value);
  config["inputs"] = inputs.size();
  const safetensors::File torch = test::run_torch("gnmt", exchange, config);
  for (std::size_t k = 0; k < outputs.size(); ++k)
    check_close(outputs[k], torch.get("out_" + std::to_string(k)), "output " + std::to_string(k));
  REQUIRE(grad_inputs.size() == inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const std::string name = "grad_in_" + std::to_string(k);
    if (torch.has(name) && grad_inputs[k].defined()) check_close(grad_inputs[k], torch.get(name), name);
  }
  // The weight-norm scale's gradient is a dot product v . dv^ / |v| with heavy cancellation: fp32
  // in any summation order lands ~1e-5 (relative) from the f64 reference, so it gets 3e-5.
  for (const NamedParameter& p : block.parameters()) {
    const bool cancelling = p.name.ends_with("normalize_scalar");
    check_close(p.parameter->grad, torch.get("grad_" + p.name), "grad of " + p.name, cancelling ? 3e-5 : 1e-5);
  }
}

void expect_gradcheck(Layer& layer, const TensorList& inputs) {
  test::GradCheckOptions options;
  options.max_elements = 20;
  const test::GradCheckReport report = test::gradcheck(layer, inputs, options);
  INFO(report.str());
  CHECK(report.ok);
  CHECK(report.skipped_kinks == 0);
}

}  // namespace

TEST_CASE("Bahdanau attention gradients match finite differences in f64") {
  BahdanauAttention attention({.query_size = 3, .key_size = 4, .units = 5});
  attention.initialize(3, 0, "attn");
  attention.to(DType::f64);
  const Tensor query = test::random_tensor({2, 3, 3}, 1, -1, 1, DType::f64);
  const Tensor keys = test::random_tensor({2, 4, 4}, 2, -1, 1, DType::f64);
  SECTION("all keys") { expect_gradcheck(attention, {query, keys}); }
  SECTION("padded keys") { expect_gradcheck(attention, {query, keys, padding_mask({0, 2}, 4, DType::i64)}); }
}

TEST_CASE("GNMT blocks' gradients match finite differences in f64") {
  const std::int64_t N = 2, T = 3, H = 3;
  SECTION("bidirectional encoder layer, passing a tensor through") {
    GnmtEncoderLayer layer({.input_size = 2, .hidden_size = H, .bidirectional = true});
    layer.initialize(1, 1, "encoder.0");
    layer.to(DType::f64);
    expect_gradcheck(layer, {test::random_tensor({N, T, 2}, 3, -1, 1, DType::f64),
                             test::random_tensor({N, 4, H}, 4, -1, 1, DType::f64)});
  }
  SECTION("residual encoder layer") {
    GnmtEncoderLayer layer({.input_size = H, .hidden_size = H, .residual = true});
    layer.initialize(1, 3, "encoder.2");
    layer.to(DType::f64);
    expect_gradcheck(layer, {test::random_tensor({N, T, H}, 5, -1, 1, DType::f64)});
  }
  SECTION("decoder attention layer with a padding mask") {
    GnmtAttentionLayer layer({.input_size = 2, .hidden_size = H, .key_padding_mask = true});
    layer.initialize(1, 5, "decoder.0");
    layer.to(DType::f64);
    expect_gradcheck(layer, {test::random_tensor({N, 4, H}, 6, -1, 1, DType::f64),
                             test::random_tensor({N, T, 2}, 7, -1, 1, DType::f64), padding_mask({1, 0}, 4, DType::i32)});
  }
  SECTION("residual decoder layer") {
    GnmtDecoderLayer layer({.hidden_size = H, .residual = true});
    layer.initialize(1, 7, "decoder.2");
    layer.to(DType::f64);
    expect_gradcheck(layer, {test::random_tensor({N, T, H}, 8, -1, 1, DType::f64),
                             test::random_tensor({N, T, H}, 9, -1, 1, DType::f64)});
  }
}

TEST_CASE("GNMT blocks equal the PyTorch reference in fp32") {
  const std::int64_t N = 3, Ts = 5, Tt = 4, H = 8;
  SECTION("attention with padding") {
    BahdanauAttention attention({.query_size = H, .key_size = H, .units = H});
    attention.initialize(2, 0, "");
    compare_with_torch(attention,
                       {test::random_tensor({N, Tt, H}, 10), test::random_tensor({N, Ts, H}, 11),
                        padding_mask({0, 2, 1}, Ts, DType::f32)},
                       {{"block", "attention"}, {"hidden_size", H}});
  }
  SECTION("bidirectional encoder layer") {
    GnmtEncoderLayer layer({.input_size = 6, .hidden_size = H, .bidirectional = true});
    layer.initialize(2, 1, "");
    compare_with_torch(layer, {test::random_tensor({N, Ts, 6}, 12), test::random_tensor({N, Tt, 6}, 13)},
                       {{"block", "encoder"}, {"input_size", 6}, {"hidden_size", H}, {"bidirectional", true},
                        {"residual", false}});
  }
  SECTION("residual encoder layer") {
    GnmtEncoderLayer layer({.input_size = H, .hidden_size = H, .residual = true});
    layer.initialize(2, 3, "");
    compare_with_torch(layer, {test::random_tensor({N, Ts, H}, 14)},
                       {{"block", "encoder"}, {"input_size", H}, {"hidden_size", H}, {"bidirectional", false},
                        {"residual", true}});
  }
  SECTION("decoder attention layer") {
    GnmtAttentionLayer layer({.input_size = 6, .hidden_size = H, .key_padding_mask = true});
    layer.initialize(2, 9, "");
    compare_with_torch(layer,
                       {test::random_tensor({N, Ts, H}, 15), test::random_tensor({N, Tt, 6}, 16),
                        padding_mask({1, 0, 3}, Ts, DType::f32)},
                       {{"block", "attention_layer"}, {"input_size", 6}, {"hidden_size", H},
                        {"key_padding_mask", true}});
  }
  SECTION("residual decoder layer") {
    GnmtDecoderLayer layer({.hidden_size = H, .residual = true});
    layer.initialize(2, 11, "");
    compare_with_torch(layer, {test::random_tensor({N, Tt, H}, 17), test::random_tensor({N, Tt, H}, 18)},
                       {{"block", "decoder"}, {"hidden_size", H}, {"residual", true}});
  }
}

TEST_CASE("GNMT blocks: names, shapes through a boundary, bad inputs") {
  GnmtAttentionLayer layer({.input_size = 16, .hidden_size = 32});
  layer.initialize(1, 9, "decoder.0");
  std::vector<std::string> names;
  for (const NamedParameter& p : layer.parameters("decoder.0")) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"decoder.0.rnn.weight_ih_l0", "decoder.0.rnn.weight_hh_l0",
                                          "decoder.0.rnn.bias_ih_l0", "decoder.0.rnn.bias_hh_l0",
                                          "decoder.0.attn.linear_att", "decoder.0.attn.normalize_scalar",
                                          "decoder.0.attn.normalize_bias", "decoder.0.attn.linear_q.weight",
                                          "decoder.0.attn.linear_k.weight"});
  const auto shapes = layer.output_shapes({{8, 50, 32}, {8, 40, 16}, {8, 40}});
  REQUIRE(shapes.size() == 3);
  CHECK(shapes[0] == Shape{8, 40, 32});
  CHECK(shapes[1] == Shape{8, 40, 32});
  CHECK(shapes[2] == Shape{8, 40});  // passed through
  CHECK_THROWS(GnmtEncoderLayer({.input_size = 8, .hidden_size = 16, .residual = true}));
  GnmtDecoderLayer decoder({.hidden_size = 4});
  decoder.initialize(1, 0, "decoder.1");
  Context ctx;
  CHECK_THROWS_WITH(decoder.forward({Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 3, 5})}, ctx),
                    Catch::Contains("decoder.1") && Catch::Contains("[2, 3, 5]"));
}
