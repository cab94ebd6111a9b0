// The CUDA backend against the CPU backend on the same inputs (gpu label: skipped without a GPU).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/rng.h>

#ifdef LOOM_WITH_CUDA
#include <loom/core/cuda/context.h>
#endif

#include "skip_without_gpu.h"

using namespace loom;

namespace {
// Skips the whole executable (ctest SKIP_RETURN_CODE 77) when there is no GPU to test on.
const test::SkipWithoutGpu skip_without_gpu_at_start;

Tensor random_cpu(const Shape& shape, std::uint64_t key) {
  Tensor t = Tensor::empty(shape);
  rng::uniform(t, 99, key, -1, 1);
  return t;
}
}  // namespace

TEST_CASE("CUDA gemm and element-wise ops equal the CPU ones", "[cuda][gpu]") {
  const Device gpu = Device::cuda(0);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = random_cpu(ta ? Shape{64, 48} : Shape{48, 64}, 1), b = random_cpu(tb ? Shape{40, 64} : Shape{64, 40}, 2);
      Tensor c = random_cpu({48, 40}, 3);
      Tensor cg = c.to(gpu);
      ops::gemm(a, ta, b, tb, c, 1.5, 0.5);
      ops::gemm(a.to(gpu), ta, b.to(gpu), tb, cg, 1.5, 0.5);
      CHECK(ops::max_abs_error(cg.to(Device::cpu()), c) < 1e-4);
    }
  Tensor x = random_cpu({33, 17}, 4), y = random_cpu({33, 17}, 5);
  Tensor out = Tensor::empty({33, 17}), outg = Tensor::empty({33, 17}, DType::f32, gpu);
  ops::add(x, y, out);
  ops::add(x.to(gpu), y.to(gpu), outg);
  CHECK(ops::max_abs_error(outg.to(Device::cpu()), out) == 0);
  ops::softmax(x, out);
  ops::softmax(x.to(gpu), outg);
  CHECK(ops::max_abs_error(outg.to(Device::cpu()), out) < 1e-6);
  Tensor bias = random_cpu({17}, 6), gb = Tensor::zeros({17}), gbg = Tensor::zeros({17}, DType::f32, gpu);
  ops::bias_grad(x, gb);
  ops::bias_grad(x.to(gpu), gbg);
  CHECK(ops::max_abs_error(gbg.to(Device::cpu()), gb) < 1e-5);
  CHECK(ops::dot(x.to(gpu), y.to(gpu)) == Approx(ops::dot(x, y)).epsilon(1e-6));
  Tensor s = ops::sum(x, 0), sg = ops::sum(x.to(gpu), 0);
  CHECK(ops::max_abs_error(sg.to(Device::cpu()), s) < 1e-5);
}

TEST_CASE("CUDA random numbers equal the CPU ones bit for bit", "[cuda][gpu][rng]") {
  Tensor cpu_values = Tensor::empty({1000}), gpu_values = Tensor::empty({1000}, DType::f32, Device::cuda(0));
  rng::normal(cpu_values, 5, 6, 0.0, 1.0, 17);
  rng::normal(gpu_values, 5, 6, 0.0, 1.0, 17);
  CHECK(gpu_values.to_float_vector() == cpu_values.to_float_vector());
  rng::uniform(cpu_values, 5, 6, -1.0, 1.0);
  rng::uniform(gpu_values, 5, 6, -1.0, 1.0);
  CHECK(gpu_values.to_float_vector() == cpu_values.to_float_vector());
}

TEST_CASE("CUDA bf16 and f16 rounding equal the CPU's bit for bit", "[cuda][gpu][bf16][f16]") {
  for (DType storage : {DType::bf16, DType::f16}) {
    Tensor x = random_cpu({4096}, 5);
    ops::scale(x, 1e-3);  // values of every exponent band down to small ones (f16 subnormals too)
    Tensor xg = x.to(Device::cuda(0));
    ops::round_to_(x, storage);
    ops::round_to_(xg, storage);
    INFO(dtype_name(storage));
    CHECK(ops::max_abs_error(xg.to(Device::cpu()), x) == 0.0);
  }
}

TEST_CASE("CUDA bf16 gemm (cuBLAS tensor cores) equals the CPU's within one bf16 step", "[cuda][gpu][bf16]") {
  // The same bf16 operands on both; each result may differ by the rounding of a different f32 sum.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = random_cpu(ta ? Shape{2, 256, 96} : Shape{2, 96, 256}, 1).to(DType::bf16);
      Tensor b = random_cpu(tb ? Shape{2, 80, 256} : Shape{2, 256, 80}, 2).to(DType::bf16);
      Tensor c = random_cpu({2, 96, 80}, 3).to(DType::bf16);
      Tensor cg = c.to(Device::cuda(0));
      ops::gemm_strided_batched(a, ta, b, tb, c, 1.5, 0.5);
      ops::gemm_strided_batched(a.to(Device::cuda(0)), ta, b.to(Device::cuda(0)), tb, cg, 1.5, 0.5);
      const std::vector<float> cpu = c.to_float_vector(), gpu = cg.to(Device::cpu()).to_float_vector();
      double worst = 0;  // in bf16 steps of the CPU's value, at least one step of 1e-2 (cancellation)
      for (std::size_t i = 0; i < cpu.size(); ++i)
        worst = std::max(worst, std::abs(double{gpu[i]} - cpu[i]) / std::ldexp(std::max(std::abs(double{cpu[i]}), 1e-2), -7));
      INFO("ta " << ta << " tb " << tb);
      CHECK(worst <= 1.0);
    }
}

TEST_CASE("CUDA f32 gemm under GemmOperandScope (bf16 / f16 x itself -> f32 tensor cores) equals the CPU's",
          "[cuda][gpu][bf16][f16]") {
  // Both round the operands to 16 bits and accumulate in f32: they differ only by the order of the sums.
  for (DType operands : {DType::bf16, DType::f16})
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = random_cpu(ta ? Shape{2, 512, 96} : Shape{2, 96, 512}, 4);
      Tensor b = random_cpu(tb ? Shape{2, 80, 512} : Shape{2, 512, 80}, 5);
      Tensor c = random_cpu({2, 96, 80}, 6);
      Tensor cg = c.to(Device::cuda(0));
      const ops::GemmOperandScope math(operands);
      ops::gemm_strided_batched(a, ta, b, tb, c, 1.5, 0.5);
      ops::gemm_strided_batched(a.to(Device::cuda(0)), ta, b.to(Device::cuda(0)), tb, cg, 1.5, 0.5);
      const std::vector<float> cpu = c.to_float_vector(), gpu = cg.to(Device::cpu()).to_float_vector();
      double worst = 0;
      for (std::size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, std::abs(double{gpu[i]} - cpu[i]));
      INFO(dtype_name(operands) << " ta " << ta << " tb " << tb);
      CHECK(worst <= 1e-4);
    }
}

TEST_CASE("the CUDA allocator caches blocks and counts exact bytes", "[cuda][gpu][memory]") {
  const Device gpu = Device::cuda(0);
  const MemoryStats before = memory_stats(gpu);
  { Tensor t = Tensor::empty({1000}, DType::f32, gpu); }
  const MemoryStats mid = memory_stats(gpu);
  CHECK(mid.live_bytes == before.live_bytes);
  { Tensor t = Tensor::empty({1000}, DType::f32, gpu); }  // served from the cache
  const MemoryStats after = memory_stats(gpu);
  CHECK(after.system_allocations == mid.system_allocations);
  CHECK(after.allocations == mid.allocations + 1);
  Tensor t = Tensor::empty({1000}, DType::f32, gpu);
  CHECK(memory_stats(gpu).live_bytes - before.live_bytes == 4000);
}

// The stream is held by a host function that waits for the test's release (cudaLaunchHostFunc:
// the stream goes on only when it returns), so the copy is certainly still queued when its pinned
// source is freed and when a block of the same size is asked for again: the fence must keep the
// freed block from coming back until the copy has read it, or the copy reads the -1s written below.
TEST_CASE("pinned host staging: page-locked, counted on the host, copies to the GPU queued safely", "[cuda][gpu][memory]") {
#ifdef LOOM_WITH_CUDA
  const Device gpu = Device::cuda(0);
  const std::int64_t n = 1 << 22;  // 16 MiB
  const MemoryStats before = memory_stats(Device::cpu());
  Tensor on_gpu = Tensor::empty({n}, DType::f32, gpu);
  std::vector<float> expected;
  std::atomic<bool> released{false};
  const auto hold = [](void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  REQUIRE(cudaLaunchHostFunc(cuda::stream(0), hold, &released) == cudaSuccess);
  // Should a CUDA call below wait for the stream after all, it is released after 20 s (and the
  // queries below fail) rather than hanging the test.
  std::jthread backstop([&] {
    for (int ms = 0; ms < 20000 && !released; ++ms) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    released = true;
  });
  {
    const PinnedHostScope staging(gpu);
    Tensor host = Tensor::empty({n});
    REQUIRE(host.is_pinned());
    CHECK(memory_stats(Device::cpu()).live_bytes == before.live_bytes + n * 4);
    for (std::int64_t i = 0; i < n; ++i) host.data<float>()[i] = static_cast<float>(i % 1000);
    expected.assign(host.data<float>(), host.data<float>() + n);
    on_gpu.copy_from(host);  // queued behind the held stream: the host does not wait
  }
  CHECK(cudaStreamQuery(cuda::stream(0)) == cudaErrorNotReady);  // the copy has not run
  {
    // Same size, same scope: the freed block must not come back while the copy is queued.
    const PinnedHostScope staging(gpu);
    Tensor reused = Tensor::empty({n});
    std::fill(reused.data<float>(), reused.data<float>() + n, -1.0f);
  }
  CHECK(cudaStreamQuery(cuda::stream(0)) == cudaErrorNotReady);
  released = true;
  backstop.join();
  const std::vector<float> got = on_gpu.to(Device::cpu()).to_float_vector();
  CHECK(got == expected);
  CHECK(memory_stats(Device::cpu()).live_bytes == before.live_bytes);
#endif
}
