// Conv2d: f64 finite differences (inputs, weight, bias; the split backward agrees with the full
// one), PyTorch 1.13 fp32 references over stride/padding/dilation/groups and both GEMM chunkings
// for each CPU path (im2col, Winograd, oneDNN),
// PyTorch's init bounds, and the error messages for bad inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

#include <loom/core/ops.h>
#include <loom/layers/conv2d.h>

#include "check_close.h"
#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;
using test::check_close;

namespace {

struct ConvCase {
  const char* name;
  Conv2dOptions options;
  Shape input;
};

// Small planes put many images in one GEMM; the 40x40 and 45x43 planes are cut into bands of tile
// rows (9 + 9 + 2 and 9 + 9 + 4 rows of tiles at 196 tiles per GEMM).
std::vector<ConvCase> cases() {
  return {
      {"3x3 pad 1 (Winograd)", {.in_channels = 3, .out_channels = 8, .kernel = 3, .padding = 1}, {2, 3, 9, 9}},
      {"3x3 pad 0, odd output (Winograd)", {.in_channels = 4, .out_channels = 5, .kernel = 3}, {2, 4, 9, 8}},
      {"3x3 pad 2, no bias (Winograd)", {.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 2, .bias = false},
       {3, 2, 5, 6}},
      {"3x3 pad 1, groups 2 (im2col)", {.in_channels = 4, .out_channels = 6, .kernel = 3, .padding = 1, .groups = 2},
       {2, 4, 8, 8}},
      {"rect kernel, stride 2, pad (1,2), dilation (2,1)",
       {.in_channels = 4, .out_channels = 6, .kernel = {3, 2}, .stride = 2, .padding = {1, 2}, .dilation = {2, 1}},
       {2, 4, 11, 10}},
      {"groups 2, stride (1,2)", {.in_channels = 4, .out_channels = 6, .kernel = 3, .stride = {1, 2}, .groups = 2},
       {3, 4, 7, 8}},
      {"depthwise, no bias",
       {.in_channels = 4, .out_channels = 8, .kernel = 3, .padding = 1, .groups = 4, .bias = false},
       {2, 4, 6, 5}},
      {"1x1 pointwise", {.in_channels = 5, .out_channels = 7, .kernel = 1}, {3, 5, 6, 6}},
      {"1x1 stride 2", {.in_channels = 5, .out_channels = 4, .kernel = 1, .stride = 2}, {2, 5, 7, 7}},
      {"3x3 on a large plane (Winograd)", {.in_channels = 3, .out_channels = 4, .kernel = 3, .padding = 1}, {2, 3, 40, 40}},
      {"3x3 pad 0, odd output, bands of tile rows (Winograd)", {.in_channels = 2, .out_channels = 3, .kernel = 3},
       {2, 2, 45, 43}},
      {"3x3 stride 2 on a large plane (im2col)", {.in_channels = 3, .out_channels = 4, .kernel = 3, .stride = 2, .padding = 1},
       {2, 3, 40, 40}},
      {"1x1 on a large plane", {.in_channels = 3, .out_channels = 4, .kernel = 1, .bias = false}, {2, 3, 40, 40}},
  };
}

nlohmann::json torch_config(const Conv2dOptions& o) {
  return {{"layer", "conv2d"},
          {"stride", {o.stride.h, o.stride.w}},
          {"padding", {o.padding.h, o.padding.w}},
          {"dilation", {o.dilation.h, o.dilation.w}},
          {"groups", o.groups}};
}

// The CPU paths a case must run on in f32, from the case and the build (the rule: layers/src/cpu/
// conv_path.cpp and winograd.cpp): im2col always; Winograd F(2x2, 3x3) for a 3x3 kernel at stride
// 1, dilation 1, no groups, equal padding of at most 2; oneDNN whenever loom is built with it.
std::vector<std::string> expected_paths(const Conv2dOptions& o) {
  std::vector<std::string> paths{"im2col"};
  if (o.kernel.h == 3 && o.kernel.w == 3 && o.stride.h == 1 && o.stride.w == 1 && o.dilation.h == 1 &&
      o.dilation.w == 1 && o.groups == 1 && o.padding.h == o.padding.w && o.padding.h <= 2)
    paths.push_back("winograd");
  if (LOOM_HAVE_ONEDNN) paths.push_back("onednn");
  return paths;
}

}  // namespace

TEST_CASE("Conv2d gradients match finite differences in f64") {
  for (const ConvCase& c : cases()) {
    SECTION(c.name) {
      Conv2d conv(c.options);
      conv.initialize(3, 0, "conv");
      conv.to(DType::f64);
      const Tensor x = test::random_tensor(c.input, 11, -1, 1, DType::f64);
      const test::GradCheckReport report = test::gradcheck(conv, {x});
      INFO(report.str());
      CHECK(report.ok);
      CHECK(report.checked > 0);
    }
  }
}

// Forces Conv2d's CPU path for one scope (LOOM_CONV_PATH, see layers/src/cpu/conv_path.h).
struct ForcedConvPath {
  explicit ForcedConvPath(const char* path) { ::setenv("LOOM_CONV_PATH", path, 1); }
  ~ForcedConvPath() { ::unsetenv("LOOM_CONV_PATH"); }
};

// Each CPU path that applies (oneDNN when built in, Winograd for 3x3 stride 1, im2col always)
// against one PyTorch reference per case; exactly those must run (none falls back unseen).
TEST_CASE("Conv2d equals PyTorch in fp32 on every CPU path") {
  for (const ConvCase& c : cases()) {
    SECTION(c.name) {
      const Tensor x = test::random_tensor(c.input, 21);
      Conv2d reference_shape(c.options);
      const Tensor grad_y = test::random_tensor(reference_shape.output_shapes({c.input})[0], 22);
      reference_shape.initialize(5, 2, "conv");
      safetensors::NamedTensors inputs{{"x", x}, {"grad_y", grad_y}, {"weight", reference_shape.weight().value}};
      if (c.options.bias) inputs.emplace_back("bias", reference_shape.bias().value);
      const safetensors::File torch = test::run_torch("cnn_layers", inputs, torch_config(c.options));
      std::vector<std::string> paths_run;
      for (const char* path : {"im2col", "winograd", "onednn"}) {
        const ForcedConvPath forced(path);
        Conv2d conv(c.options);
        conv.initialize(5, 2, "conv");
        if (conv.cpu_path(DType::f32) != path) continue;  // does not apply to this case or build
        paths_run.push_back(path);
        Context ctx;
        const Tensor y = conv.forward({x}, ctx)[0];
        const Tensor grad_x = conv.backward({grad_y}, ctx)[0];
        check_close(y, torch.get("y"), std::string(path) + " y");
        check_close(grad_x, torch.get("grad_x"), std::string(path) + " grad_x");
        check_close(conv.weight().grad, torch.get("grad_weight"), std::string(path) + " grad_weight");
        if (c.options.bias) check_close(conv.bias().grad, torch.get("grad_bias"), std::string(path) + " grad_bias");
      }
      CHECK(paths_run == expected_paths(c.options));
    }
  }
}

TEST_CASE("Conv2d keeps f64 off oneDNN and refuses an unknown LOOM_CONV_PATH") {
  Conv2d conv({.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 1});
  {
    const ForcedConvPath forced("onednn");
    CHECK(conv.cpu_path(DType::f64) == "winograd");
  }
  const ForcedConvPath forced("direct");
  CHECK_THROWS_WITH(conv.cpu_path(DType::f32), Catch::Contains("LOOM_CONV_PATH='direct' is not a Conv2d path"));
}

TEST_CASE("Conv2d accumulates parameter gradients and splits backward") {
  Conv2d conv({.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 1});
  conv.initialize(1, 0);
  const Tensor x = test::random_tensor({2, 2, 5, 5}, 1);
  const Tensor grad_y = test::random_tensor({2, 3, 5, 5}, 2);
  Context first, second;
  conv.forward({x}, first);
  conv.forward({x}, second);  // two micro-batches in flight
  conv.backward({grad_y}, first);
  const Tensor once = conv.weight().grad.clone();
  const Tensor grad_x = conv.backward_input({grad_y}, second)[0];
  CHECK(ops::max_abs_error(conv.weight().grad, once) == 0.0);  // backward_input leaves weights alone
  conv.backward_weight(second);
  Tensor twice = once.clone();
  ops::scale(twice, 2.0);
  CHECK(test::relative_error(conv.weight().grad, twice) < 1e-6);
  CHECK(grad_x.shape() == x.shape());
  CHECK(second.saved_bytes() == 0);
}

TEST_CASE("Conv2d initialises like PyTorch: U(-1/sqrt(fan_in), 1/sqrt(fan_in))") {
  Conv2d conv({.in_channels = 16, .out_channels = 32, .kernel = 3, .groups = 2});
  conv.initialize(9, 4, "features.conv");
  const double bound = 1.0 / std::sqrt(8.0 * 9.0);
  for (Parameter* p : conv.local_parameters()) {
    const auto values = p->value.to_double_vector();
    double lo = 0, hi = 0, sum = 0;
    for (double v : values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    INFO(p->name);
    CHECK(lo >= -bound);
    CHECK(hi <= bound);
    CHECK(hi - lo > 1.5 * bound);
    if (p->name == "weight") CHECK(std::abs(sum / static_cast<double>(values.size())) < 0.05 * bound);
  }
  Conv2d same({.in_channels = 16, .out_channels = 32, .kernel = 3, .groups = 2});
  same.initialize(9, 4, "features.conv");
  CHECK(ops::max_abs_error(same.weight().value, conv.weight().value) == 0.0);
}

TEST_CASE("Conv2d reports shapes, FLOPs and bad inputs") {
  Conv2d conv({.in_channels = 64, .out_channels = 128, .kernel = 3, .stride = 2, .padding = 1});
  conv.initialize(1, 3, "blocks.3.conv");
  CHECK(conv.output_shapes({{32, 64, 56, 56}})[0] == Shape{32, 128, 28, 28});
  CHECK(conv.flops({{32, 64, 56, 56}}) == Approx(2.0 * 32 * 128 * 28 * 28 * 64 * 9));
  CHECK(conv.activation_bytes({{32, 64, 56, 56}}) == 32u * 64 * 56 * 56 * 4);
  Context ctx;
  CHECK_THROWS_WITH(conv.forward({Tensor::zeros({2, 3, 8, 8})}, ctx),
                    Catch::Contains("blocks.3.conv") && Catch::Contains("[2, 3, 8, 8]") &&
                        Catch::Contains("[128, 64, 3, 3]"));
  CHECK_THROWS_WITH(conv.forward({Tensor::zeros({2, 64, 8, 8}, DType::f64)}, ctx), Catch::Contains("dtype"));
  CHECK_THROWS(Conv2d({.in_channels = 6, .out_channels = 4, .kernel = 3, .groups = 4}));
  CHECK_THROWS_WITH(Conv2d({.in_channels = 1, .out_channels = 1, .kernel = 5}).forward({Tensor::zeros({1, 1, 3, 3})},
                                                                                       ctx),
                    Catch::Contains("does not fit"));
}
