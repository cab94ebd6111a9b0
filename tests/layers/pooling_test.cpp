// MaxPool2d, AvgPool2d and global average pooling: f64 finite differences (max pooling away from
// ties, which the checker detects as kinks), PyTorch 1.13 fp32 references including padding,
// count_include_pad and PyTorch's first-maximum tie rule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

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

namespace {

// Max pooling by definition: over each clipped window in row-major order, the first NaN, else the
// first largest value; returns y and the gradient that routes grad_y = 1, 2, 3, ... to the winners.
Result naive_max_pool(const Tensor& x, const Pool2dOptions& o) {
  const Shape s = x.shape();
  const std::int64_t stride = o.stride.value_or(o.kernel).h, k = o.kernel.h, pad = o.padding.h;
  const std::int64_t oh_count = (s[2] + 2 * pad - k) / stride + 1, ow_count = (s[3] + 2 * pad - k) / stride + 1;
  const std::vector<float> in = x.to_float_vector();
  std::vector<float> y, grad(in.size(), 0.0f);
  for (std::int64_t p = 0; p < s[0] * s[1]; ++p)
    for (std::int64_t oh = 0; oh < oh_count; ++oh)
      for (std::int64_t ow = 0; ow < ow_count; ++ow) {
        std::int64_t best = -1;
        for (std::int64_t ih = std::max<std::int64_t>(0, oh * stride - pad); ih < std::min(s[2], oh * stride - pad + k); ++ih)
          for (std::int64_t iw = std::max<std::int64_t>(0, ow * stride - pad); iw < std::min(s[3], ow * stride - pad + k); ++iw) {
            const std::int64_t i = (p * s[2] + ih) * s[3] + iw;
            const bool best_nan = best >= 0 && std::isnan(in[best]);
            if (!best_nan && (best < 0 || std::isnan(in[i]) || in[i] > in[best])) best = i;
          }
        y.push_back(in[best]);
        grad[best] += static_cast<float>(y.size());
      }
  return {Tensor::from_vector<float>(y, {s[0], s[1], oh_count, ow_count}), Tensor::from_vector<float>(grad, s)};
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

}  // namespace

TEST_CASE("max pooling picks the first NaN, else the first maximum, at the edges and inside") {
  // Values from a few levels (many ties), some NaNs: inside rows (the vectorised loop) and at the edges.
  const Tensor r = test::random_tensor({2, 3, 11, 13}, 41);
  std::vector<float> v = r.to_float_vector();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i % 37 == 5 ? std::nanf("") : std::round(v[i] * 2.0f);
  const Tensor x = Tensor::from_vector<float>(v, r.shape());
  const std::vector<Pool2dOptions> cases{{.kernel = 3, .stride = 2, .padding = 1},
                                         {.kernel = 2},
                                         {.kernel = 3, .stride = 1},
                                         {.kernel = 5, .stride = 3, .padding = 2}};
  for (const Pool2dOptions& o : cases) {
    MaxPool2d pool(o);
    const Result expected = naive_max_pool(x, o);
    std::vector<float> ramp(static_cast<std::size_t>(expected.y.numel()));
    for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i + 1);
    const Result got = run(pool, x, Tensor::from_vector<float>(ramp, expected.y.shape()));
    INFO("kernel " << o.kernel.h << " stride " << o.stride.value_or(o.kernel).h << " padding " << o.padding.h);
    CHECK(same_floats(got.y.to_float_vector(), expected.y.to_float_vector()));
    CHECK(got.grad_x.to_float_vector() == expected.grad_x.to_float_vector());
  }
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
