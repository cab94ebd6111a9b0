// Depthwise convolution speed at the AmoebaNet paper-size cell shapes (batch 8): forward +
// backward (input and weight gradients) of DepthwiseConv2d's direct kernels and of
// Conv2d(groups = channels), the minimum over repetitions, as a table. Run with
// LOOM_NUM_THREADS=2 next to tests/layers/reference/depthwise_bench.py (PyTorch); docs/layers.md
// has the command and the figures. Not a test: it asserts nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include <loom/layers/conv2d.h>
#include <loom/layers/depthwise_conv2d.h>

#include "torch_reference.h"

using namespace loom;

namespace {

struct BenchShape {
  std::int64_t channels, size, kernel, stride;
};

// Milliseconds of the fastest of `repeats` forward + backward passes.
double fastest_ms(Layer& layer, const Tensor& x, int repeats) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    Context ctx;
    const auto start = std::chrono::steady_clock::now();
    const Tensor y = layer.forward({x}, ctx)[0];
    layer.backward({y}, ctx);  // dY = Y: any tensor of the right shape
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::stoi(argv[1]) : 5;
  const BenchShape shapes[] = {{512, 28, 3, 1}, {512, 28, 5, 1}, {512, 28, 3, 2}, {1024, 14, 3, 1},
                               {1024, 14, 5, 1}, {2048, 7, 3, 1}, {2048, 7, 5, 1}};
  std::printf("%-22s %12s %16s %8s\n", "shape (N=8)", "depthwise ms", "grouped conv ms", "speedup");
  for (const BenchShape& s : shapes) {
    const DepthwiseConv2dOptions o{.channels = s.channels, .kernel = s.kernel, .stride = s.stride, .padding = s.kernel / 2};
    DepthwiseConv2d depthwise(o);
    Conv2d grouped({.in_channels = s.channels, .out_channels = s.channels, .kernel = s.kernel, .stride = s.stride,
                    .padding = s.kernel / 2, .groups = s.channels, .bias = false});
    depthwise.initialize(1, 0, "dw");
    grouped.initialize(1, 0, "dw");
    const Tensor x = test::random_tensor({8, s.channels, s.size, s.size}, 1);
    const double fast = fastest_ms(depthwise, x, repeats), slow = fastest_ms(grouped, x, std::max(1, repeats / 2));
    const std::string name = std::to_string(s.channels) + "x" + std::to_string(s.size) + "^2 k" +
                             std::to_string(s.kernel) + " s" + std::to_string(s.stride);
    std::printf("%-22s %12.2f %16.2f %7.1fx\n", name.c_str(), fast, slow, slow / fast);
  }
  return 0;
}
