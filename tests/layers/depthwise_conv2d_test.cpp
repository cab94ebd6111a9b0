// DepthwiseConv2d and SeparableConv2d: f64 finite differences over stride, padding, dilation,
// rectangular kernels and bias (the split backward agrees with the full one), PyTorch 1.13 fp32
// references (nn.Conv2d with groups == channels; the separable stack), agreement with loom's own
// Conv2d(groups = channels), gradient accumulation over micro-batches, and the errors.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/depthwise_conv2d.h>
#include <loom/layers/separable_conv2d.h>

#include "check_close.h"
#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;
using test::check_close;

namespace {

struct DepthwiseCase {
  const char* name;
  DepthwiseConv2dOptions options;
  Shape input;
};

std::vector<DepthwiseCase> cases() {
  return {{"3x3 pad 1", {.channels = 4, .kernel = 3, .padding = 1}, {2, 4, 7, 6}},
          {"5x5 stride 2 pad 2, bias", {.channels = 3, .kernel = 5, .stride = 2, .padding = 2, .bias = true}, {2, 3, 9, 8}},
          {"(3,2) stride (1,2) pad (2,1) dilation (2,1)",
           {.channels = 2, .kernel = {3, 2}, .stride = {1, 2}, .padding = {2, 1}, .dilation = {2, 1}},
           {3, 2, 6, 7}},
          {"1x7 pad (0,3), no padding rows", {.channels = 3, .kernel = {1, 7}, .padding = {0, 3}}, {2, 3, 4, 9}},
          {"3x3 stride 3 pad 0 on a plane that does not divide", {.channels = 2, .kernel = 3, .stride = 3}, {1, 2, 8, 10}}};
}

Conv2dOptions as_grouped_conv(const DepthwiseConv2dOptions& o) {
  return {.in_channels = o.channels, .out_channels = o.channels, .kernel = o.kernel, .stride = o.stride,
          .padding = o.padding, .dilation = o.dilation, .groups = o.channels, .bias = o.bias};
}

}  // namespace

TEST_CASE("DepthwiseConv2d gradients match finite differences in f64") {
  for (const DepthwiseCase& c : cases()) {
    SECTION(c.name) {
      DepthwiseConv2d conv(c.options);
      conv.initialize(3, 0, "conv");
      conv.to(DType::f64);
      const test::GradCheckReport report = test::gradcheck(conv, {test::random_tensor(c.input, 11, -1, 1, DType::f64)});
      INFO(report.str());
      CHECK(report.ok);
      CHECK(report.checked > 40);
    }
  }
}

TEST_CASE("DepthwiseConv2d equals PyTorch and loom's grouped Conv2d in fp32") {
  for (const DepthwiseCase& c : cases()) {
    SECTION(c.name) {
      DepthwiseConv2d conv(c.options);
      conv.initialize(5, 2, "conv");
      const Tensor x = test::random_tensor(c.input, 21);
      Context ctx;
      const Tensor y = conv.forward({x}, ctx)[0];
      const Tensor grad_y = test::random_tensor(y.shape(), 22);
      const Tensor grad_x = conv.backward({grad_y}, ctx)[0];
      const auto& o = c.options;
      safetensors::NamedTensors inputs{{"x", x}, {"grad_y", grad_y}, {"weight", conv.weight().value}};
      if (o.bias) inputs.emplace_back("bias", conv.bias().value);
      const safetensors::File torch = test::run_torch(
          "cnn_layers", inputs,
          {{"layer", "conv2d"}, {"stride", {o.stride.h, o.stride.w}}, {"padding", {o.padding.h, o.padding.w}},
           {"dilation", {o.dilation.h, o.dilation.w}}, {"groups", o.channels}});
      check_close(y, torch.get("y"), "y");
      check_close(grad_x, torch.get("grad_x"), "grad_x");
      check_close(conv.weight().grad, torch.get("grad_weight"), "grad_weight");
      if (o.bias) check_close(conv.bias().grad, torch.get("grad_bias"), "grad_bias");

      Conv2d grouped(as_grouped_conv(o));
      grouped.initialize(5, 2, "conv");  // same names and index: the same initial values
      CHECK(ops::max_abs_error(grouped.weight().value, conv.weight().value) == 0.0);
      Context grouped_ctx;
      check_close(y, grouped.forward({x}, grouped_ctx)[0], "y vs Conv2d(groups = channels)");
      check_close(grad_x, grouped.backward({grad_y}, grouped_ctx)[0], "grad_x vs Conv2d(groups = channels)");
      check_close(conv.weight().grad, grouped.weight().grad, "grad_weight vs Conv2d(groups = channels)");
    }
  }
}

TEST_CASE("DepthwiseConv2d accumulates over micro-batches and checks its inputs") {
  DepthwiseConv2d conv({.channels = 3, .kernel = 3, .padding = 1, .bias = true});
  conv.initialize(1, 0, "dw");
  const Tensor x = test::random_tensor({2, 3, 5, 5}, 1), grad_y = test::random_tensor({2, 3, 5, 5}, 2);
  Context first, second;
  conv.forward({x}, first);
  conv.forward({x}, second);
  conv.backward({grad_y}, first);
  const Tensor once = conv.weight().grad.clone();
  conv.backward_input({grad_y}, second);
  CHECK(ops::max_abs_error(conv.weight().grad, once) == 0.0);  // backward_input leaves weights alone
  conv.backward_weight(second);
  Tensor twice = once.clone();
  ops::scale(twice, 2.0);
  CHECK(test::relative_error(conv.weight().grad, twice) < 1e-6);
  CHECK(second.saved_bytes() == 0);
  CHECK(conv.output_shapes({{8, 3, 28, 28}})[0] == Shape{8, 3, 28, 28});
  CHECK(conv.flops({{1, 3, 4, 4}}) == 2.0 * 3 * 16 * 9);
  Context ctx;
  CHECK_THROWS_WITH(conv.forward({test::random_tensor({2, 4, 5, 5}, 3)}, ctx), Catch::Contains("is not [N, 3, H, W]"));
  CHECK_THROWS_WITH(DepthwiseConv2d({.channels = 0}), Catch::Contains("channels must be positive"));
}

TEST_CASE("SeparableConv2d: gradients in f64 and PyTorch in fp32") {
  for (const std::int64_t stride : {1, 2}) {
    SECTION("5x5 stride " + std::to_string(stride)) {
      SeparableConv2d block({.in_channels = 4, .out_channels = 6, .kernel = 5, .stride = stride});
      block.initialize(5, 0, "sep");
      block.to(DType::f64);
      test::GradCheckOptions options;
      options.max_elements = 16;
      const test::GradCheckReport report =
          test::gradcheck(block, {test::random_tensor({2, 4, 6, 6}, 3, -1, 1, DType::f64)}, options);
      INFO(report.str());
      CHECK(report.ok);

      SeparableConv2d same({.in_channels = 4, .out_channels = 6, .kernel = 5, .stride = stride});
      same.initialize(17, 3, "");
      const Tensor x = test::random_tensor({2, 4, 6, 6}, 81);
      safetensors::NamedTensors exchange{{"x0", x}};
      for (const NamedParameter& p : same.parameters()) exchange.emplace_back(p.name, p.parameter->value.clone());
      Context ctx;
      const Tensor y = same.forward({x}, ctx)[0];
      const Tensor grad_y = test::random_tensor(y.shape(), 91);
      exchange.emplace_back("grad_y0", grad_y);
      const Tensor grad_x = same.backward({grad_y}, ctx)[0];
      const safetensors::File torch = test::run_torch(
          "amoeba", exchange,
          {{"layer", "separable"}, {"in_channels", 4}, {"out_channels", 6}, {"kernel", 5}, {"stride", stride},
           {"training", true}});
      check_close(y, torch.get("y0"), "y");
      check_close(grad_x, torch.get("grad_x0"), "grad_x");
      for (const NamedParameter& p : same.parameters())
        check_close(p.parameter->trainable ? p.parameter->grad : p.parameter->value,
                    torch.get(p.parameter->trainable ? "grad_" + p.name : p.name), p.name);
    }
  }
  CHECK_THROWS_WITH(SeparableConv2d({.in_channels = 4, .out_channels = 4, .kernel = 4}), Catch::Contains("odd"));
}
