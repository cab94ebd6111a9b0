// The CUDA implementations of Conv2d, pooling, BatchNorm2d, LSTM, the CNN blocks and the GNMT
// blocks against their CPU versions on the same inputs, weights and output gradients: outputs,
// input gradients, parameter gradients and BatchNorm running statistics (gpu label: skipped,
// visibly, without a GPU).
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/gnmt.h>
#include <loom/layers/lstm.h>
#include <loom/layers/pooling.h>
#include <loom/layers/resnet_bottleneck.h>
#include <loom/layers/vgg_block.h>

#include "check_close.h"
#include "skip_without_gpu.h"
#include "torch_reference.h"

using namespace loom;
using test::check_gpu_close;

namespace {

const test::SkipWithoutGpu skip_without_gpu_at_start;

struct Run {
  TensorList outputs, grad_inputs, parameters, parameter_grads;
};

Run run(Layer& layer, const TensorList& inputs, const TensorList& grad_outputs, bool training, Device device) {
  TensorList moved;
  for (const Tensor& t : inputs) moved.push_back(t.to(device));
  TensorList grads;
  for (const Tensor& t : grad_outputs) grads.push_back(t.defined() ? t.to(device) : t);
  Context ctx;
  ctx.training = training;
  Run r;
  for (const Tensor& t : layer.forward(moved, ctx)) r.outputs.push_back(t.to(Device::cpu()));
  for (const Tensor& t : layer.backward(grads, ctx)) r.grad_inputs.push_back(t.defined() ? t.to(Device::cpu()) : t);
  for (const NamedParameter& p : layer.parameters()) {
    r.parameters.push_back(p.parameter->value.to(Device::cpu()));
    r.parameter_grads.push_back(p.parameter->grad.defined() ? p.parameter->grad.to(Device::cpu()) : Tensor());
  }
  return r;
}

// Initialises the layer, runs it on the CPU, then (same initial values) on the GPU, and compares.
void compare(Layer& layer, const TensorList& inputs, bool training = true, double tolerance = 1e-5) {
  layer.initialize(7, 1, "layer");
  Context probe;
  probe.training = training;
  TensorList grad_outputs;
  std::uint64_t key = 900;
  for (const Tensor& y : layer.forward(inputs, probe)) grad_outputs.push_back(test::random_tensor(y.shape(), key++));
  layer.initialize(7, 1, "layer");  // the probe moved BatchNorm's running statistics
  layer.zero_grad();
  const Run cpu = run(layer, inputs, grad_outputs, training, Device::cpu());
  layer.initialize(7, 1, "layer");
  layer.zero_grad();
  layer.to(Device::cuda(0));
  const Run gpu = run(layer, inputs, grad_outputs, training, Device::cuda(0));
  constexpr test::GpuResult copied = test::GpuResult::copied_to_host;  // by run()
  // Both runs give one value of each kind per output, input and parameter (the probe's count),
  // so every loop below compares all of them and none runs zero times unnoticed.
  REQUIRE(cpu.outputs.size() == grad_outputs.size());
  REQUIRE(gpu.outputs.size() == cpu.outputs.size());
  REQUIRE(cpu.grad_inputs.size() == inputs.size());
  REQUIRE(gpu.grad_inputs.size() == cpu.grad_inputs.size());
  REQUIRE(gpu.parameters.size() == layer.parameters().size());
  REQUIRE(cpu.parameters.size() == gpu.parameters.size());
  for (std::size_t k = 0; k < cpu.outputs.size(); ++k)
    check_gpu_close(gpu.outputs[k], cpu.outputs[k], "output " + std::to_string(k), tolerance, copied);
  for (std::size_t k = 0; k < cpu.grad_inputs.size(); ++k)
    check_gpu_close(gpu.grad_inputs[k], cpu.grad_inputs[k], "input gradient " + std::to_string(k), tolerance, copied);
  const auto names = layer.parameters();
  for (std::size_t j = 0; j < names.size(); ++j) {
    check_gpu_close(gpu.parameters[j], cpu.parameters[j], names[j].name, tolerance, copied);
    check_gpu_close(gpu.parameter_grads[j], cpu.parameter_grads[j], "gradient of " + names[j].name, tolerance, copied);
  }
}

}  // namespace

TEST_CASE("Conv2d on CUDA (cuDNN) equals the CPU", "[gpu]") {
  Conv2d plain({.in_channels = 8, .out_channels = 16, .kernel = 3, .padding = 1});
  compare(plain, {test::random_tensor({4, 8, 14, 14}, 1)});
  Conv2d strided({.in_channels = 8, .out_channels = 12, .kernel = {3, 2}, .stride = 2, .padding = {1, 0},
                  .dilation = {2, 1}, .groups = 4, .bias = false});
  compare(strided, {test::random_tensor({3, 8, 15, 13}, 2)});
}

TEST_CASE("pooling on CUDA (cuDNN) equals the CPU", "[gpu]") {
  const Tensor x = test::random_tensor({4, 6, 11, 12}, 3);
  MaxPool2d max_pool({.kernel = 3, .stride = 2, .padding = 1});
  compare(max_pool, {x});
  AvgPool2d avg_include({.kernel = 3, .stride = 2, .padding = 1});
  compare(avg_include, {x});
  AvgPool2d avg_exclude({.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = false});
  compare(avg_exclude, {x});
  GlobalAvgPool2d global;
  compare(global, {x});
}

TEST_CASE("BatchNorm2d on CUDA (cuDNN) equals the CPU", "[gpu]") {
  for (const bool training : {true, false}) {
    BatchNorm2d bn({.channels = 6, .momentum = 0.3});
    compare(bn, {test::random_tensor({5, 6, 7, 9}, 4, -1, 3)}, training);
  }
}

TEST_CASE("LSTM on CUDA equals the CPU", "[gpu]") {
  LSTM lstm({.input_size = 12, .hidden_size = 16, .num_layers = 3, .bidirectional_first = true});
  compare(lstm, {test::random_tensor({4, 9, 12}, 5), test::random_tensor({4, 4, 16}, 6),
                 test::random_tensor({4, 4, 16}, 7)});
}

TEST_CASE("CNN and GNMT blocks on CUDA equal the CPU", "[gpu]") {
  ResNetBottleneck bottleneck({.in_channels = 16, .planes = 8, .stride = 2});
  compare(bottleneck, {test::random_tensor({4, 16, 10, 10}, 8)});
  VggBlock vgg({.in_channels = 3, .out_channels = 8, .convs = 2, .batch_norm = true});
  compare(vgg, {test::random_tensor({2, 3, 12, 12}, 9)});
  GnmtAttentionLayer attention_layer({.input_size = 8, .hidden_size = 16, .key_padding_mask = true});
  Tensor mask = Tensor::zeros({3, 7});
  Tensor last_row = mask.slice(2, 3);
  ops::fill(last_row, 1.0);  // a fully padded row gets a zero context on both devices
  compare(attention_layer, {test::random_tensor({3, 7, 16}, 10), test::random_tensor({3, 5, 8}, 11), mask});
  GnmtDecoderLayer decoder({.hidden_size = 16, .residual = true});
  compare(decoder, {test::random_tensor({3, 5, 16}, 12), test::random_tensor({3, 5, 16}, 13)});
}
