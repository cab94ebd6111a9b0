// The CUDA versions of Linear, activations, Embedding, LayerNorm, Dropout, losses, attention and
// the transformer blocks against their CPU versions on the same parameters and inputs (gpu label:
// the executable exits 77, a visible skip, without a GPU).
#include <catch2/catch.hpp>

#include <functional>

#include <loom/layers/activation.h>
#include <loom/layers/attention.h>
#include <loom/layers/dropout.h>
#include <loom/layers/embedding.h>
#include <loom/layers/layer_norm.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/transformer.h>

#include "check_close.h"
#include "skip_without_gpu.h"
#include "torch_reference.h"

using namespace loom;
using test::check_gpu_close;

namespace {

const test::SkipWithoutGpu skip_without_gpu_at_start;

// Runs forward + backward of two identically initialised layers, one on each device.
void compare(const std::function<LayerPtr()>& make, const TensorList& inputs, const TensorList& grad_outputs,
             double tolerance = 2e-5) {
  constexpr test::GpuResult on_device = test::GpuResult::on_device;
  const Device gpu = Device::cuda(0);
  LayerPtr cpu_layer = make(), gpu_layer = make();
  cpu_layer->initialize(5, 3, "blocks.3");
  gpu_layer->initialize(5, 3, "blocks.3");
  gpu_layer->to(gpu);
  TensorList gpu_inputs, gpu_grads;
  for (const Tensor& t : inputs) gpu_inputs.push_back(t.defined() ? t.to(gpu) : t);
  for (const Tensor& t : grad_outputs) gpu_grads.push_back(t.defined() ? t.to(gpu) : t);
  Context cpu_ctx, gpu_ctx;
  cpu_ctx.seed = gpu_ctx.seed = 17;
  cpu_ctx.step = gpu_ctx.step = 2;
  const TensorList cpu_out = cpu_layer->forward(inputs, cpu_ctx), gpu_out = gpu_layer->forward(gpu_inputs, gpu_ctx);
  REQUIRE(cpu_out.size() == gpu_out.size());
  for (std::size_t i = 0; i < cpu_out.size(); ++i)
    check_gpu_close(gpu_out[i], cpu_out[i], "output " + std::to_string(i), tolerance, on_device);
  const TensorList cpu_in = cpu_layer->backward(grad_outputs, cpu_ctx), gpu_in = gpu_layer->backward(gpu_grads, gpu_ctx);
  REQUIRE(cpu_in.size() == gpu_in.size());
  for (std::size_t i = 0; i < cpu_in.size(); ++i)
    check_gpu_close(gpu_in[i], cpu_in[i], "input gradient " + std::to_string(i), tolerance, on_device);
  auto cp = cpu_layer->parameters(), gp = gpu_layer->parameters();
  for (std::size_t i = 0; i < cp.size(); ++i)
    if (cp[i].parameter->trainable)
      check_gpu_close(gp[i].parameter->grad, cp[i].parameter->grad, "gradient of " + cp[i].name, tolerance, on_device);
}

Tensor rnd(const Shape& s, std::uint64_t key) { return test::random_tensor(s, key); }

}  // namespace

TEST_CASE("CUDA Linear, activations, LayerNorm and Dropout equal the CPU ones", "[gpu]") {
  compare([] { return std::make_unique<Linear>(33, 20); }, {rnd({4, 5, 33}, 1)}, {rnd({4, 5, 20}, 2)});
  for (const char* name : {"relu", "gelu", "tanh", "sigmoid"}) {
    INFO(name);
    compare([&] { return std::make_unique<Activation>(parse_activation(name)); }, {rnd({6, 70}, 3)}, {rnd({6, 70}, 4)});
  }
  compare([] { return std::make_unique<LayerNorm>(300); }, {rnd({7, 300}, 5)}, {rnd({7, 300}, 6)});
  compare([] { return std::make_unique<Dropout>(0.3); }, {rnd({8, 40}, 7)}, {rnd({8, 40}, 8)}, 1e-6);
}

TEST_CASE("CUDA Embedding and losses equal the CPU ones", "[gpu]") {
  Tensor ids = Tensor::from_vector<std::int64_t>({1, 2, 3, 1, 0, 9, 1, 2}, Shape{2, 4});
  compare([] { return std::make_unique<Embedding>(10, 12, 0); }, {ids}, {rnd({2, 4, 12}, 9)});
  Tensor targets = Tensor::from_vector<std::int64_t>({1, -100, 3, 0, 6, 6}, Shape{6});
  compare([] { return std::make_unique<CrossEntropyLoss>(-100, 0.1); }, {rnd({6, 7}, 10), targets},
          {Tensor::full(Shape{}, 1.0)});
  compare([] { return std::make_unique<MSELoss>(); }, {rnd({5, 3}, 11), rnd({5, 3}, 12)}, {Tensor::full(Shape{}, 1.0)});
}

TEST_CASE("CUDA attention and transformer blocks equal the CPU ones", "[gpu]") {
  Tensor mask = Tensor::from_vector<std::int64_t>({0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1}, Shape{2, 6});
  compare([] { return std::make_unique<MultiHeadAttention>(32, 4, false, true, 0.1); }, {rnd({2, 6, 32}, 13), mask},
          {rnd({2, 6, 32}, 14)});
  compare([] { return std::make_unique<MultiHeadAttention>(32, 4, true); },
          {rnd({2, 5, 32}, 15), rnd({2, 6, 32}, 16), mask}, {rnd({2, 5, 32}, 17)});
  TransformerOptions o;
  o.d_model = 32;
  o.heads = 4;
  o.d_ff = 64;
  o.dropout = 0.1;
  o.activation = ActivationKind::gelu;
  for (bool norm_first : {false, true}) {
    o.norm_first = norm_first;
    compare([&] { return std::make_unique<TransformerEncoderLayer>(o); }, {rnd({2, 6, 32}, 18), mask},
            {rnd({2, 6, 32}, 19)});
    compare([&] { return std::make_unique<TransformerDecoderLayer>(o); }, {rnd({2, 5, 32}, 20), rnd({2, 6, 32}, 21)},
            {rnd({2, 5, 32}, 22), Tensor()});
  }
}
