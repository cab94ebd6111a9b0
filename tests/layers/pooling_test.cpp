// MaxPool2d, AvgPool2d and global average pooling: f64 finite differences (max pooling away from
// ties, which the checker detects as kinks), PyTorch 1.13 fp32 references including padding,
// count_include_pad and PyTorch's first-maximum tie rule.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/pooling.h>

#include "check_close.h"
#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;
using test::check_close;

namespace {

struct Result {
  Tensor y, grad_x;
};

Result run(Layer& layer, const Tensor& x, const Tensor& grad_y_source) {
  Context ctx;
  const Tensor y = layer.forward({x}, ctx)[0];
  const Tensor grad_y = grad_y_source.defined() ? grad_y_source : test::random_tensor(y.shape(), 77);
  return {y, layer.backward({grad_y}, ctx)[0]};
}

void compare_with_torch(Layer& layer, const Tensor& x, nlohmann::json config) {
  Context ctx;
  const Tensor y = layer.forward({x}, ctx)[0];
  const Tensor grad_y = test::random_tensor(y.shape(), 78);
  const Tensor grad_x = layer.backward({grad_y}, ctx)[0];
  const safetensors::File torch = test::run_torch("cnn_layers", {{"x", x}, {"grad_y", grad_y}}, config);
  check_close(y, torch.get("y"), "y");
  check_close(grad_x, torch.get("grad_x"), "grad_x");
}

nlohmann::json pool_config(const char* layer, const Pool2dOptions& o) {
  const Size2 stride = o.stride.value_or(o.kernel);
  return {{"layer", layer},
          {"kernel", {o.kernel.h, o.kernel.w}},
          {"stride", {stride.h, stride.w}},
          {"padding", {o.padding.h, o.padding.w}},
          {"count_include_pad", o.count_include_pad}};
}

std::vector<std::pair<const char*, Pool2dOptions>> pool_cases() {
  return {
      {"2x2", {.kernel = 2}},
      {"3x3 stride 2 pad 1", {.kernel = 3, .stride = 2, .padding = 1}},
      {"(3,2) stride (1,2) pad (1,0)", {.kernel = {3, 2}, .stride = Size2{1, 2}, .padding = {1, 0}}},
      {"3x3 stride 2 pad 1 excluding padding", {.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = false}},
  };
}

}  // namespace

TEST_CASE("pooling gradients match finite differences in f64") {
  for (const auto& [name, options] : pool_cases()) {
    SECTION(std::string("max ") + name) {
      MaxPool2d pool(options);
      const test::GradCheckReport report =
          test::gradcheck(pool, {test::random_tensor({2, 3, 7, 8}, 5, -1, 1, DType::f64)});
      INFO(report.str());
      CHECK(report.ok);
      CHECK(report.checked > 0);
    }
    SECTION(std::string("avg ") + name) {
      AvgPool2d pool(options);
      const test::GradCheckReport report =
          test::gradcheck(pool, {test::random_tensor({2, 3, 7, 8}, 6, -1, 1, DType::f64)});
      INFO(report.str());
      CHECK(report.ok);
      CHECK(report.skipped_kinks == 0);
    }
  }
  SECTION("global average") {
    GlobalAvgPool2d pool;
    const test::GradCheckReport report =
        test::gradcheck(pool, {test::random_tensor({3, 4, 5, 6}, 7, -1, 1, DType::f64)});
    INFO(report.str());
    CHECK(report.ok);
  }
}

TEST_CASE("max pooling routes a tie to the first maximum, as PyTorch") {
  MaxPool2d pool({.kernel = 2});
  const Tensor x = Tensor::from_vector<float>({1, 3, 3, 0,  //
                                               3, 2, 1, 0,  //
                                               5, 5, 7, 7,  //
                                               5, 5, 7, 7},
                                              {1, 1, 4, 4});
  const Result r = run(pool, x, Tensor::full({1, 1, 2, 2}, 1.0));
  CHECK(r.y.to_float_vector() == std::vector<float>{3, 3, 5, 7});
  CHECK(r.grad_x.to_float_vector() ==
        std::vector<float>{0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0});
  compare_with_torch(pool, x, pool_config("max_pool", pool.options()));
}

TEST_CASE("pooling equals PyTorch in fp32") {
  const Tensor x = test::random_tensor({3, 4, 9, 10}, 31);
  for (const auto& [name, options] : pool_cases()) {
    SECTION(std::string("max ") + name) {
      MaxPool2d pool(options);
      compare_with_torch(pool, x, pool_config("max_pool", options));
    }
    SECTION(std::string("avg ") + name) {
      AvgPool2d pool(options);
      compare_with_torch(pool, x, pool_config("avg_pool", options));
    }
  }
  SECTION("global average") {
    GlobalAvgPool2d pool;
    compare_with_torch(pool, x, {{"layer", "global_avg_pool"}});
  }
}

TEST_CASE("pooling shapes and bad inputs") {
  MaxPool2d pool({.kernel = 3, .stride = 2, .padding = 1});
  CHECK(pool.output_shapes({{32, 64, 112, 112}})[0] == Shape{32, 64, 56, 56});
  GlobalAvgPool2d global;
  CHECK(global.output_shapes({{8, 2048, 7, 7}})[0] == Shape{8, 2048});
  Context ctx;
  CHECK_THROWS_WITH(pool.forward({Tensor::zeros({2, 3, 8})}, ctx), Catch::Contains("[2, 3, 8]"));
  CHECK_THROWS(MaxPool2d({.kernel = 2, .padding = 2}));
}
