// AmoebaNet's pieces: ZeroPad2d, FactorizedReduce, SelectInput and the AmoebaNet-D normal and
// reduction cells. f64 finite differences through each (ReLU kinks and max-pool ties are detected
// and skipped; the split backward must agree with the full one), PyTorch 1.13 fp32 references
// (tests/layers/reference/amoeba.py writes the cells out from the genotype) for outputs, all
// gradients and the BatchNorm running statistics, the cells' weight counts against the closed
// forms the DAPPLE profile implies, and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include <loom/core/ops.h>
#include <loom/layers/amoeba_cell.h>
#include <loom/layers/factorized_reduce.h>
#include <loom/layers/select_input.h>
#include <loom/layers/zero_pad2d.h>

#include "check_close.h"
#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;
using test::check_close_with_floor;
using test::largest_magnitude;

namespace {

// "x0", "grad_y1": the names in the exchange file. (Not `"x" + std::to_string(i)`: GCC 12 at -O3
// warns falsely on a literal + a temporary string, bug 105329.)
std::string indexed(std::string name, std::size_t i) { return name += std::to_string(i); }

// The comparisons' tolerance: f64 (the cells) to 1e-10, fp32 to 1e-5.
double tolerance_for(const Tensor& loom_value) { return loom_value.dtype() == DType::f64 ? 1e-10 : 1e-5; }

// Forward + backward of `layer` on `inputs` and the same in PyTorch, both in `dtype`; compares
// outputs, input gradients, parameter gradients and buffers. The cells compare in f64: behind
// their BatchNorms some parameter gradients are sums that nearly cancel (a conv whose output only
// reaches the loss through a training-mode BatchNorm), which fp32 leaves to rounding noise.
void compare_with_torch(Layer& layer, const std::vector<Shape>& input_shapes, nlohmann::json config,
                        DType dtype = DType::f32) {
  layer.initialize(17, 3, "");
  layer.to(dtype);
  safetensors::NamedTensors exchange;
  TensorList inputs;
  for (std::size_t i = 0; i < input_shapes.size(); ++i) {
    inputs.push_back(test::random_tensor(input_shapes[i], 81 + i, -1, 1, dtype));
    exchange.emplace_back(indexed("x", i), inputs.back());
  }
  for (const NamedParameter& p : layer.parameters()) exchange.emplace_back(p.name, p.parameter->value.clone());
  Context ctx;
  const TensorList ys = layer.forward(inputs, ctx);
  TensorList grad_ys;
  for (std::size_t i = 0; i < ys.size(); ++i) {
    grad_ys.push_back(test::random_tensor(ys[i].shape(), 91 + i, -1, 1, dtype));
    exchange.emplace_back(indexed("grad_y", i), grad_ys.back());
  }
  const TensorList grad_xs = layer.backward(grad_ys, ctx);
  config["training"] = true;
  const safetensors::File torch = test::run_torch("amoeba", exchange, config);
  // Norm-wise relative errors, the parameter gradients' measured against at least 1e-3 of the
  // largest one: a gradient that is zero in exact arithmetic (a BatchNorm bias whose output reaches
  // the loss only through a training-mode BatchNorm, which removes per-channel sums) comes out of
  // both frameworks as rounding noise. Floor 0 elsewhere.
  for (std::size_t i = 0; i < ys.size(); ++i)
    check_close_with_floor(ys[i], torch.get(indexed("y", i)), indexed("y", i), tolerance_for(ys[i]), 0);
  for (std::size_t i = 0; i < grad_xs.size(); ++i)
    check_close_with_floor(grad_xs[i], torch.get(indexed("grad_x", i)), indexed("grad_x", i),
                           tolerance_for(grad_xs[i]), 0);
  double gradient_scale = 0;
  for (const NamedParameter& p : layer.parameters())
    if (p.parameter->trainable) gradient_scale = std::max(gradient_scale, largest_magnitude(p.parameter->grad));
  for (const NamedParameter& p : layer.parameters()) {
    if (p.parameter->trainable)
      check_close_with_floor(p.parameter->grad, torch.get("grad_" + p.name), "grad of " + p.name,
                             tolerance_for(p.parameter->grad), 1e-3 * gradient_scale);
    else
      check_close_with_floor(p.parameter->value, torch.get(p.name), p.name, tolerance_for(p.parameter->value), 0);
  }
}

void check_gradients(Layer& layer, const std::vector<Shape>& input_shapes, std::int64_t min_checked) {
  layer.initialize(5, 0, "block");
  layer.to(DType::f64);
  TensorList inputs;
  for (std::size_t i = 0; i < input_shapes.size(); ++i)
    inputs.push_back(test::random_tensor(input_shapes[i], 3 + i, -1, 1, DType::f64));
  test::GradCheckOptions options;
  options.max_elements = 12;
  const test::GradCheckReport report = test::gradcheck(layer, inputs, options);
  INFO(report.str());
  CHECK(report.ok);
  CHECK(report.checked >= min_checked);
}

nlohmann::json cell_config(const AmoebaCellOptions& o) {
  return {{"layer", "cell"},           {"prev_prev", o.prev_prev_channels}, {"prev", o.prev_channels},
          {"channels", o.channels},    {"reduction", o.reduction},          {"reduction_prev", o.reduction_prev}};
}

struct CellCase {
  const char* name;
  AmoebaCellOptions options;
  std::vector<Shape> inputs;
};

// The four kinds of cell the presets build, at C = 8 (bottleneck width 2).
std::vector<CellCase> cell_cases() {
  return {{"normal cell", {.prev_prev_channels = 32, .prev_channels = 32, .channels = 8}, {{2, 32, 4, 4}, {2, 32, 4, 4}}},
          {"normal cell after a reduction (FactorizedReduce)",
           {.prev_prev_channels = 12, .prev_channels = 24, .channels = 8, .reduction_prev = true},
           {{2, 12, 8, 8}, {2, 24, 4, 4}}},
          {"reduction cell", {.prev_prev_channels = 16, .prev_channels = 16, .channels = 8, .reduction = true},
           {{2, 16, 6, 6}, {2, 16, 6, 6}}},
          {"first stem cell (one input, raw second state)", {.prev_channels = 3, .channels = 8, .reduction = true},
           {{2, 3, 8, 8}}}};
}

std::int64_t conv_weights(Layer& layer) {
  std::int64_t count = 0;
  for (const NamedParameter& p : layer.parameters())
    if (p.parameter->value.rank() == 4) count += p.parameter->value.numel();
  return count;
}

}  // namespace

TEST_CASE("ZeroPad2d pads and crops like torch.nn.functional.pad") {
  for (const ZeroPad2dOptions& o : {ZeroPad2dOptions{-1, 1, -1, 1}, ZeroPad2dOptions{2, 0, 1, -2}}) {
    ZeroPad2d pad(o);
    check_gradients(pad, {{2, 3, 5, 4}}, 12);
    compare_with_torch(pad, {{2, 3, 5, 4}}, {{"layer", "zero_pad"}, {"amounts", {o.left, o.right, o.top, o.bottom}}});
  }
  ZeroPad2d shift({-1, 1, -1, 1});
  Context ctx;
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  CHECK(shift.forward({x}, ctx)[0].to_double_vector() == std::vector<double>{4, 0, 0, 0});
  CHECK_THROWS_WITH(ZeroPad2d({.left = -4}).output_shapes({{1, 1, 3, 4}}), Catch::Contains("leaves nothing"));
}

TEST_CASE("FactorizedReduce: gradients and PyTorch") {
  FactorizedReduce reduce(6, 8);
  check_gradients(reduce, {{2, 6, 6, 5}}, 40);
  FactorizedReduce same(6, 8);
  compare_with_torch(same, {{2, 6, 6, 5}}, {{"layer", "factorized_reduce"}, {"in_channels", 6}, {"out_channels", 8}});
  CHECK(same.output_shapes({{2, 6, 7, 7}})[0] == Shape{2, 8, 4, 4});
  CHECK_THROWS_WITH(FactorizedReduce(6, 7), Catch::Contains("out even"));
}

TEST_CASE("AmoebaNet cells: gradients match finite differences in f64") {
  for (const CellCase& c : cell_cases()) {
    SECTION(c.name) {
      AmoebaCell cell(c.options);
      check_gradients(cell, c.inputs, 200);
    }
  }
}

TEST_CASE("AmoebaNet cells equal PyTorch in f64") {
  for (const CellCase& c : cell_cases()) {
    SECTION(c.name) {
      AmoebaCell cell(c.options);
      compare_with_torch(cell, c.inputs, cell_config(c.options), DType::f64);
    }
  }
}

TEST_CASE("AmoebaNet cells: shapes, weight counts, names and errors") {
  // A steady normal cell (inputs of 4C channels) holds 13.75 C^2 conv weights, a reduction cell
  // after normal cells (inputs of 2C) 7.4375 C^2: the DAPPLE profile's cell_2 and
  // reduction_cell_0 at C = 512 and 1024.
  AmoebaCell normal({.prev_prev_channels = 2048, .prev_channels = 2048, .channels = 512});
  CHECK(conv_weights(normal) == 3604480);
  AmoebaCell reduction({.prev_prev_channels = 2048, .prev_channels = 2048, .channels = 1024, .reduction = true});
  CHECK(conv_weights(reduction) == 7798784);
  CHECK(reduction.output_shapes({{8, 2048, 28, 28}, {8, 2048, 28, 28}}) ==
        std::vector<Shape>{{8, 2048, 28, 28}, {8, 3072, 14, 14}});
  CHECK(normal.out_channels() == 2048);

  AmoebaCell small({.prev_prev_channels = 32, .prev_channels = 32, .channels = 8});
  small.initialize(1, 0, "cell_0");
  std::vector<std::string> names;
  for (const NamedParameter& p : small.parameters("cell_0")) names.push_back(p.name);
  CHECK(names.front() == "cell_0.reduce1.1.weight");
  CHECK(std::find(names.begin(), names.end(), "cell_0.ops.3.4.weight") != names.end());  // the 1x7 conv
  CHECK(std::find(names.begin(), names.end(), "cell_0.ops.2.0.weight") == names.end());  // none: identity

  AmoebaCell odd({.prev_prev_channels = 16, .prev_channels = 16, .channels = 8, .reduction = true});
  CHECK_THROWS_WITH(odd.output_shapes({{1, 16, 7, 7}, {1, 16, 7, 7}}), Catch::Contains("even input sizes"));
  CHECK_THROWS_WITH(AmoebaCell({.prev_prev_channels = 8, .prev_channels = 8, .channels = 6}),
                    Catch::Contains("multiple of 4"));
  Context ctx;
  CHECK_THROWS_WITH(small.forward({test::random_tensor({1, 32, 4, 4}, 1)}, ctx), Catch::Contains("expected 2 input"));
}

TEST_CASE("SelectInput passes one tensor and returns zeros for the others") {
  SelectInput select(-1, 2);
  const Tensor a = test::random_tensor({2, 3}, 1), b = test::random_tensor({2, 4}, 2);
  Context ctx;
  const TensorList y = select.forward({a, b}, ctx);
  REQUIRE(y.size() == 1);
  CHECK(ops::max_abs_error(y[0], b) == 0.0);
  const Tensor g = test::random_tensor({2, 4}, 3);
  const TensorList grads = select.backward({g}, ctx);
  REQUIRE(grads.size() == 2);
  CHECK(grads[0].shape() == a.shape());
  CHECK(ops::sum_of_squares(grads[0]) == 0.0);
  CHECK(ops::max_abs_error(grads[1], g) == 0.0);
  CHECK_THROWS(SelectInput(2, 2));
}
