// loom's CPU thread pool: every index exactly once, nested and concurrent callers, and a
// transformer block and a Winograd convolution giving the same results on 1 and 3 threads.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include <loom/core/threads.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/transformer.h>

#include <loom/core/parallel.h>
#include "torch_reference.h"

using namespace loom;

TEST_CASE("parallel_for visits every index once, also nested and from several threads") {
  set_num_threads(3);
  for (std::int64_t n : {0, 1, 7, 1000, 100000}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    parallel_for(n, 16, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) hits[static_cast<std::size_t>(i)]++;
      parallel_for(4, 1, [](std::int64_t, std::int64_t) {});  // nested: runs inline
    });
    for (auto& h : hits) CHECK(h.load() == 1);
  }
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int k = 0; k < 50; ++k)
        parallel_for(1000, 10, [&](std::int64_t begin, std::int64_t end) { total += end - begin; });
    });
  for (auto& c : callers) c.join();
  CHECK(total.load() == 4 * 50 * 1000);
  set_num_threads(1);
}

namespace {

// Output, input gradient and parameter gradients of one forward/backward, flattened.
std::vector<double> run_once(Layer& layer, const Shape& input) {
  Context ctx;
  Tensor y = layer.forward({test::random_tensor(input, 1)}, ctx)[0];
  Tensor dx = layer.backward({test::random_tensor(y.shape(), 2)}, ctx)[0];
  std::vector<double> all = y.to_double_vector();
  for (double v : dx.to_double_vector()) all.push_back(v);
  for (auto& np : layer.parameters())
    for (double v : np.parameter->grad.to_double_vector()) all.push_back(v);
  return all;
}

double worst_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(a[i])));
  return worst;
}

}  // namespace

TEST_CASE("a Winograd Conv2d gives the same results on 1 and 3 threads (chunks spread over the pool)") {
  // 3 images of 30x30: 15x15 tiles in bands of 13 + 2 rows, 6 chunks: the threaded path.
  std::vector<std::vector<double>> results;
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    Conv2d conv(Conv2dOptions{.in_channels = 5, .out_channels = 7, .kernel = 3, .padding = 1});
    conv.initialize(3, 0, "conv");
    results.push_back(run_once(conv, Shape{3, 5, 30, 30}));
  }
  set_num_threads(1);
  CHECK(worst_relative_difference(results[0], results[1]) < 1e-5);
}

TEST_CASE("a transformer block gives the same results on 1 and 3 threads") {
  TransformerOptions o;
  o.d_model = 64;
  o.heads = 4;
  o.d_ff = 128;
  o.dropout = 0.1;
  o.activation = ActivationKind::gelu;
  std::vector<std::vector<double>> results;
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    TransformerEncoderLayer block(o);
    block.initialize(3, 0, "enc");
    results.push_back(run_once(block, Shape{4, 40, 64}));
  }
  set_num_threads(1);
  CHECK(worst_relative_difference(results[0], results[1]) < 1e-5);
}
