// Chain and Sequential: hierarchical names, partition-independent initialisation, per-block
// reports, memory categories, and backward through a stack of layers checked in f64.
#include <catch2/catch.hpp>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/layers/activation.h>
#include <loom/layers/chain.h>
#include <loom/layers/linear.h>

#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;

namespace {

LayerPtr mlp_block(std::int64_t in, std::int64_t out) {
  auto block = std::make_unique<Sequential>();
  block->add(std::make_unique<Linear>(in, out), "fc");
  block->add(std::make_unique<ReLU>(), "act");
  return block;
}

Chain make_chain() {
  Chain chain;
  chain.add(mlp_block(4, 8), "input");
  chain.add(mlp_block(8, 8));
  chain.add(mlp_block(8, 8));
  chain.add(std::make_unique<Linear>(8, 3), "head");
  return chain;
}

}  // namespace

TEST_CASE("chain names parameters hierarchically and by global block index") {
  Chain chain = make_chain();
  chain.initialize(7);
  auto params = chain.parameters();
  std::vector<std::string> names;
  for (auto& p : params) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"input.fc.weight", "input.fc.bias", "1.fc.weight", "1.fc.bias",
                                          "2.fc.weight", "2.fc.bias", "head.weight", "head.bias"});
  CHECK(chain.block(1).name() == "1");
  CHECK(chain.block(1).block_index() == 1);
  CHECK(chain.parameter_bytes() == (4 * 8 + 8 + 2 * (8 * 8 + 8) + 8 * 3 + 3) * 4);
}

TEST_CASE("initial values depend only on seed, block index and name, not on the partition") {
  Chain full = make_chain();
  full.initialize(11);
  Chain whole = make_chain();
  Chain stage2 = whole.extract(2, 4);  // blocks 2..3 as another rank would hold them
  stage2.initialize(11);
  CHECK(stage2.first_block_index() == 2);
  Chain stage0 = whole.extract(0, 1), stage1 = whole.extract(0, 1);
  CHECK(stage1.first_block_index() == 1);
  CHECK(stage1.block_name(0) == "1");
  CHECK(whole.size() == 0);
  Chain another = make_chain();
  CHECK_THROWS_WITH(another.extract(1, 2), Catch::Contains("neither a prefix nor a suffix"));
  auto a = full.parameters(), b = stage2.parameters();
  REQUIRE(b.size() == 4);
  for (std::size_t i = 0; i < b.size(); ++i) {
    CHECK(a[4 + i].name == b[i].name);
    CHECK(ops::max_abs_error(a[4 + i].parameter->value, b[i].parameter->value) == 0.0);
  }
  // A different seed gives different values; same-shaped blocks differ from each other.
  Chain other = make_chain();
  other.initialize(12);
  CHECK(ops::max_abs_error(full.parameters()[2].parameter->value, other.parameters()[2].parameter->value) > 0.0);
  CHECK(ops::max_abs_error(full.parameters()[2].parameter->value, full.parameters()[4].parameter->value) > 0.0);
  // PyTorch's bound for Linear(8, 8): |w| <= 1/sqrt(8).
  const auto w = full.parameters()[2].parameter->value.to_double_vector();
  for (double v : w) CHECK(std::abs(v) <= 1.0 / std::sqrt(8.0));
}

TEST_CASE("describe_blocks reports shapes, parameter bytes, FLOPs and activation bytes") {
  Chain chain = make_chain();
  auto infos = chain.describe_blocks({Shape{5, 4}});
  REQUIRE(infos.size() == 4);
  CHECK(infos[0].output_shapes[0] == Shape{5, 8});
  CHECK(infos[3].output_shapes[0] == Shape{5, 3});
  CHECK(infos[0].parameter_bytes == (4 * 8 + 8) * 4);
  CHECK(infos[1].flops == Approx(2.0 * 5 * 8 * 8 + 5 * 8 + 5 * 8));
  CHECK(infos[1].activation_bytes == 5 * 8 * 4 * 2);  // Linear input and ReLU output
  CHECK(infos[3].output_bytes == 5 * 3 * 4);
  CHECK(infos[2].index == 2);
}

TEST_CASE("forward-saved tensors are charged to activations and freed by backward") {
  Chain chain = make_chain();
  chain.initialize(3);
  Tensor x = test::random_tensor(Shape{16, 4}, 1);
  const auto before = memory_stats().live(MemoryCategory::activations);
  Context ctx;
  TensorList y = chain.forward({x}, ctx);
  CHECK(ctx.saved_bytes() > 0);
  CHECK(memory_stats().live(MemoryCategory::activations) - before >= static_cast<std::int64_t>(ctx.saved_bytes()) - 16 * 4 * 4);
  Tensor grad = Tensor::full(y[0].shape(), 1.0);
  chain.backward({grad}, ctx);
  CHECK(ctx.saved_bytes() == 0);
  y.clear();
  CHECK(memory_stats().live(MemoryCategory::activations) == before);
  CHECK(memory_stats().live(MemoryCategory::parameters) >= static_cast<std::int64_t>(chain.parameter_bytes()));
}

TEST_CASE("several contexts live at once (1F1B) and gradients accumulate") {
  Chain chain = make_chain();
  chain.initialize(5);
  Tensor x1 = test::random_tensor(Shape{3, 4}, 21), x2 = test::random_tensor(Shape{3, 4}, 22);
  Context c1, c2;
  TensorList y1 = chain.forward({x1}, c1);
  TensorList y2 = chain.forward({x2}, c2);
  Tensor g = test::random_tensor(Shape{3, 3}, 23);
  chain.backward({g}, c2);
  chain.backward({g}, c1);
  const Tensor accumulated = chain.parameters()[0].parameter->grad.clone();
  // The same two micro-batches one after the other.
  chain.zero_grad();
  Context d1;
  chain.forward({x1}, d1);
  chain.backward({g}, d1);
  Context d2;
  chain.forward({x2}, d2);
  chain.backward({g}, d2);
  CHECK(ops::max_abs_error(chain.parameters()[0].parameter->grad, accumulated) < 1e-6);
}

TEST_CASE("a chain of Linear and ReLU passes the f64 gradient check (split backward too)") {
  Chain chain = make_chain();
  chain.initialize(9);
  chain.to(DType::f64);
  Tensor x = test::random_tensor(Shape{6, 4}, 31, -1, 1, DType::f64);
  auto report = test::gradcheck(chain, {x});
  INFO(report.str());
  CHECK(report.ok);
  CHECK(report.checked > 100);
}

TEST_CASE("wrong input shapes name the layer, parameter and both shapes") {
  Chain chain = make_chain();
  chain.initialize(1);
  Context ctx;
  Tensor x = Tensor::zeros(Shape{2, 5});
  try {
    chain.forward({x}, ctx);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK(message.find("Linear 'input.fc'") != std::string::npos);
    CHECK(message.find("[2, 5]") != std::string::npos);
    CHECK(message.find("weight shape [8, 4]") != std::string::npos);
  }
}
