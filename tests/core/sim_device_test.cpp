// The sim device (core/device.h): a second device on the CPU. Its tensors are charged to its own
// ledger, never the host's; the generic ops run on it with the CPU kernels and give the CPU's
// numbers bit for bit; a fresh block reads NaN (nothing is recycled silently); host-only access
// (span) and mixing devices in one op are errors that name the devices; to(device) and copy_from
// are the way across, in both directions.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include <loom/core/device_memory.h>
#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/rng.h>
#include <loom/core/tensor.h>

using namespace loom;

namespace {
Tensor host_values(std::int64_t rows, std::int64_t cols, float base) {
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = base + 0.25f * static_cast<float>(i % 13) - 1.5f;
  return Tensor::from_vector(values, Shape{rows, cols});
}
}  // namespace

TEST_CASE("sim device: parse and print", "[core][device][sim]") {
  CHECK(Device::parse("sim") == Device::sim(0));
  CHECK(Device::parse("sim:3") == Device::sim(3));
  CHECK(Device::sim(1).str() == "sim:1");
  CHECK(Device::parse("cuda:2") == Device::cuda(2));
  CHECK(Device::parse("cuda") == Device::cuda(0));
  CHECK_THROWS_WITH(Device::parse("sim:"), Catch::Contains("bad device 'sim:'"));
  CHECK_THROWS_WITH(Device::parse("simx"), Catch::Contains("sim or sim:N"));
  CHECK_THROWS_WITH(Device::parse("cuda:-1"), Catch::Contains("bad device"));
  CHECK(!Device::sim().is_cpu());
  CHECK(!Device::sim().is_cuda());
}

TEST_CASE("sim device: its own ledger, exact bytes, none on the host", "[core][device][sim]") {
  const Device sim = Device::sim(1);
  const MemoryStats host_before = memory_stats(Device::cpu());
  const MemoryStats sim_before = memory_stats(sim);
  const MemoryStats sim0_before = memory_stats(Device::sim(0));
  {
    MemoryCategoryScope scope(MemoryCategory::parameters);
    Tensor a = Tensor::zeros({10, 3}, DType::f32, sim);  // 120 bytes
    Tensor b = Tensor::empty({7}, DType::f64, sim);      // 56 bytes
    CHECK(a.device() == sim);
    const MemoryStats s = memory_stats(sim);
    CHECK(s.live(MemoryCategory::parameters) - sim_before.live(MemoryCategory::parameters) == 176);
    CHECK(s.live_bytes - sim_before.live_bytes == 176);
    CHECK(s.allocations - sim_before.allocations == 2);
    CHECK(memory_stats(Device::cpu()).live_bytes == host_before.live_bytes);
    CHECK(memory_stats(Device::sim(0)).live_bytes == sim0_before.live_bytes);  // another index, another ledger
  }
  CHECK(memory_stats(sim).live_bytes == sim_before.live_bytes);
  CHECK(memory_stats(sim).reserved_bytes == sim_before.reserved_bytes);
}

TEST_CASE("sim device: a fresh block reads NaN until written", "[core][device][sim]") {
  const Tensor fresh = Tensor::empty({4, 4}, DType::f32, Device::sim());
  for (float v : fresh.to_float_vector()) CHECK(std::isnan(v));
  const Tensor zeros = Tensor::zeros({4}, DType::f64, Device::sim());
  for (double v : zeros.to_double_vector()) CHECK(v == 0.0);
}

TEST_CASE("sim device: ops run the CPU kernels, bit for bit", "[core][device][sim]") {
  const Tensor a = host_values(7, 5, 0.5f), b = host_values(5, 9, -0.25f), bias = host_values(1, 9, 1.0f).reshape({9});
  Tensor c = ops::matmul(a, b);
  ops::bias_add(c, bias);
  Tensor expected = Tensor::empty(c.shape());
  ops::softmax(c, expected);

  const Device sim = Device::sim();
  Tensor c_sim = ops::matmul(a.to(sim), b.to(sim));
  ops::bias_add(c_sim, bias.to(sim));
  Tensor result = Tensor::empty(c_sim.shape(), DType::f32, sim);
  ops::softmax(c_sim, result);
  CHECK(result.device() == sim);
  CHECK(result.to_float_vector() == expected.to_float_vector());

  Tensor noise_cpu = Tensor::empty({64}), noise_sim = Tensor::empty({64}, DType::f32, sim);
  rng::normal(noise_cpu, 9, 3, 0.0, 1.0);
  rng::normal(noise_sim, 9, 3, 0.0, 1.0);
  CHECK(noise_sim.to_float_vector() == noise_cpu.to_float_vector());
}

TEST_CASE("sim device: host-only access and mixed devices are errors", "[core][device][sim]") {
  const Tensor host = host_values(3, 4, 0.0f);
  const Tensor sim = host.to(Device::sim());
  CHECK(!sim.same_storage(host));
  CHECK_THROWS_WITH(sim.span<float>(), Catch::Contains("span()") && Catch::Contains("sim:0") &&
                                           Catch::Contains("not in host memory"));
  CHECK_THROWS_WITH(require_host(sim, "write metrics"), Catch::Contains("write metrics") && Catch::Contains("sim:0"));
  CHECK_NOTHROW(require_host(host, "write metrics"));
  Tensor out = Tensor::empty({3, 4}, DType::f32, Device::sim());
  CHECK_THROWS_WITH(ops::add(host, sim, out), Catch::Contains("different devices (cpu and sim:0)"));
  CHECK_THROWS_WITH(ops::matmul(host, sim, false, true), Catch::Contains("different devices"));
  CHECK_THROWS_WITH(ops::add(sim, sim.to(Device::sim(1)), out), Catch::Contains("sim:0 and sim:1"));
}

TEST_CASE("sim device: explicit copies cross in both directions", "[core][device][sim]") {
  const Tensor host = host_values(6, 2, 2.0f);
  const Tensor on_sim = host.to(Device::sim());
  CHECK(on_sim.to(Device::sim()).same_storage(on_sim));  // same device: no copy
  const Tensor other = on_sim.to(Device::sim(2));
  CHECK(other.device() == Device::sim(2));
  const Tensor back = other.to(Device::cpu());
  CHECK(back.device().is_cpu());
  CHECK(back.to_float_vector() == host.to_float_vector());
  Tensor rows = Tensor::empty({3, 2}, DType::f32, Device::sim());
  rows.copy_from(host.slice(3, 6));  // host rows into a sim tensor
  Tensor into_host = Tensor::zeros({3, 2});
  into_host.copy_from(rows);
  CHECK(into_host.to_float_vector() == host.slice(3, 6).to_float_vector());
  CHECK(on_sim.clone().device() == Device::sim());
}

TEST_CASE("sim device: running out of its memory is one error with the device, bytes and category",
          "[core][device][sim]") {
  setenv("LOOM_SIM_MEMORY_MB", "1", 1);  // a 1 MiB device
  {
    Tensor kept;
    {
      MemoryCategoryScope scope(MemoryCategory::parameters);
      kept = Tensor::zeros({100, 1000}, DType::f32, Device::sim());  // 400,000 bytes fit
    }
    const DeviceMemoryInfo info = device_memory_info(Device::sim());
    CHECK(info.total_bytes == 1 << 20);
    CHECK(info.free_bytes == (1 << 20) - 400000);
    CHECK_FALSE(info.host);  // this process's own capacity
    MemoryCategoryScope scope(MemoryCategory::activations);
    CHECK_THROWS_WITH(Tensor::zeros({200, 1000}, DType::f32, Device::sim()),
                      Catch::Contains("out of memory on sim:0: 800000 bytes (0.8 MiB) for activations did not fit") &&
                          Catch::Contains("loom's tensors there hold 0.4 MiB (parameters 0.4 MiB)") &&
                          Catch::Contains("0.6 MiB free of 1.0 MiB"));
    CHECK(memory_stats(Device::sim()).live_bytes == 400000);  // the failed allocation is not counted
  }
  CHECK(device_memory_info(Device::sim()).free_bytes == 1 << 20);  // all given back
  unsetenv("LOOM_SIM_MEMORY_MB");
  CHECK_NOTHROW(Tensor::zeros({200, 1000}, DType::f32, Device::sim()));
  CHECK(device_memory_info(Device::sim()).total_bytes > 1 << 20);  // unlimited: the host's figures
  CHECK(device_memory_info(Device::sim()).host);
  CHECK(device_memory_info(Device::cpu()).host);
}
