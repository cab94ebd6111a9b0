// Transformer encoder (post- and pre-LN, GELU/ReLU, padding and causal masks) and decoder layers
// against PyTorch's nn.TransformerEncoderLayer / nn.TransformerDecoderLayer, and in f64 against
// finite differences (with dropout, whose masks are deterministic).
#include <catch2/catch.hpp>

#include <loom/layers/transformer.h>

#include "expect.h"
#include "gradcheck.h"

using namespace loom;

namespace {

TransformerOptions options(bool norm_first, const char* activation) {
  TransformerOptions o;
  o.d_model = 16;
  o.heads = 4;
  o.d_ff = 24;
  o.dropout = 0.0;
  o.activation = parse_activation(activation);
  o.norm_first = norm_first;
  return o;
}

void randomize_norms(Layer& layer, std::uint64_t key) {
  for (auto& np : layer.parameters())
    if (np.name.find("norm") != std::string::npos)
      np.parameter->value = test::random_tensor(np.parameter->value.shape(), key++, 0.5, 1.5);
}

}  // namespace

TEST_CASE("TransformerEncoderLayer matches PyTorch") {
  struct Case {
    bool norm_first;
    const char* activation;
    bool padding, causal;
  };
  for (const Case& c : {Case{false, "relu", false, false}, Case{true, "gelu", true, false}, Case{true, "gelu", false, true},
                        Case{false, "gelu", true, false}}) {
    INFO("norm_first " << c.norm_first << " " << c.activation << " padding " << c.padding << " causal " << c.causal);
    TransformerOptions o = options(c.norm_first, c.activation);
    o.causal = c.causal;
    TransformerEncoderLayer block(o);
    block.initialize(5, 2, "");
    randomize_norms(block, 70);
    Tensor x = test::random_tensor(Shape{2, 6, 16}, 51);
    Tensor grad_y = test::random_tensor(Shape{2, 6, 16}, 52);
    Tensor mask = Tensor::from_vector<std::int64_t>({0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1}, Shape{2, 6});
    TensorList inputs{x};
    if (c.padding) inputs.push_back(mask);
    Context ctx;
    Tensor y = block.forward(inputs, ctx)[0];
    TensorList grads = block.backward({grad_y}, ctx);
    REQUIRE(grads.size() == inputs.size());
    safetensors::NamedTensors in{{"x", x}, {"grad_y", grad_y}};
    if (c.padding) in.emplace_back("key_padding_mask", mask);
    test::add_parameters(in, block);
    auto ref = test::run_torch("attention", in,
                               {{"block", true}, {"decoder", false}, {"d_model", 16}, {"heads", 4}, {"d_ff", 24},
                                {"activation", c.activation}, {"norm_first", c.norm_first}, {"eps", 1e-5},
                                {"causal", c.causal}});
    test::expect_close(ref, "y", y);
    test::expect_close(ref, "grad_x", grads[0]);
    test::expect_parameter_grads_close(ref, block);
  }
}

TEST_CASE("TransformerDecoderLayer matches PyTorch and accumulates the memory gradient") {
  for (bool norm_first : {false, true}) {
    INFO("norm_first " << norm_first);
    TransformerDecoderLayer block(options(norm_first, "relu"));
    block.initialize(6, 3, "");
    randomize_norms(block, 80);
    Tensor x = test::random_tensor(Shape{2, 5, 16}, 61);
    Tensor memory = test::random_tensor(Shape{2, 7, 16}, 62);
    Tensor grad_y = test::random_tensor(Shape{2, 5, 16}, 63);
    Context ctx;
    TensorList outputs = block.forward({x, memory}, ctx);
    CHECK(outputs[1].same_storage(memory));
    TensorList grads = block.backward({grad_y, Tensor()}, ctx);
    safetensors::NamedTensors in{{"x", x}, {"memory", memory}, {"grad_y", grad_y}};
    test::add_parameters(in, block);
    auto ref = test::run_torch("attention", in,
                               {{"block", true}, {"decoder", true}, {"d_model", 16}, {"heads", 4}, {"d_ff", 24},
                                {"activation", "relu"}, {"norm_first", norm_first}, {"eps", 1e-5}, {"causal", true}});
    test::expect_close(ref, "y", outputs[0]);
    test::expect_close(ref, "grad_x", grads[0]);
    test::expect_close(ref, "grad_memory", grads[1]);
    test::expect_parameter_grads_close(ref, block);
  }
}

TEST_CASE("transformer blocks pass the f64 gradient check with dropout") {
  for (bool norm_first : {false, true}) {
    INFO("norm_first " << norm_first);
    TransformerOptions o = options(norm_first, "gelu");
    o.d_model = 8;
    o.heads = 2;
    o.d_ff = 12;
    o.dropout = 0.2;
    test::GradCheckOptions check;
    check.max_elements = 16;
    TransformerEncoderLayer encoder(o);
    encoder.initialize(1, 0, "enc");
    encoder.to(DType::f64);
    auto report = test::gradcheck(encoder, {test::random_tensor(Shape{2, 3, 8}, 71, -1, 1, DType::f64)}, check);
    INFO(report.str());
    CHECK(report.ok);
    TransformerDecoderLayer decoder(o);
    decoder.initialize(1, 1, "dec");
    decoder.to(DType::f64);
    report = test::gradcheck(decoder, {test::random_tensor(Shape{2, 3, 8}, 72, -1, 1, DType::f64),
                                       test::random_tensor(Shape{2, 4, 8}, 73, -1, 1, DType::f64)},
                             check);
    INFO(report.str());
    CHECK(report.ok);
  }
}

TEST_CASE("block reports: parameter bytes, shapes, FLOPs") {
  TransformerOptions o = options(false, "relu");
  TransformerEncoderLayer block(o);
  const std::size_t E = 16, F = 24;
  CHECK(block.parameter_bytes() == 4 * ((3 * E * E + 3 * E) + (E * E + E) + (E * F + F) + (F * E + E) + 4 * E));
  CHECK(block.output_shapes({Shape{2, 6, 16}})[0] == Shape{2, 6, 16});
  CHECK(block.flops({Shape{2, 6, 16}}) > 2.0 * 2 * 6 * (4 * 16 * 16 + 2 * 16 * 24));
  CHECK(block.activation_bytes({Shape{2, 6, 16}}) > 0);
}
