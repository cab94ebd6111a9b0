// Allocator accounting is exact: live and peak bytes, per category, with scoped categories.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <loom/core/memory.h>
#include <loom/core/tensor.h>

using namespace loom;

TEST_CASE("live and peak bytes are exact, per category", "[memory]") {
  const MemoryStats before = memory_stats();
  reset_peak_memory();
  {
    MemoryCategoryScope scope(MemoryCategory::activations);
    Tensor a = Tensor::empty({10, 3}, DType::f32);  // 120 bytes
    Tensor b = Tensor::empty({7}, DType::f64);      // 56 bytes
    {
      MemoryCategoryScope inner(MemoryCategory::gradients);
      Tensor g = Tensor::empty({5}, DType::bf16);  // 10 bytes
      const MemoryStats s = memory_stats();
      CHECK(s.live(MemoryCategory::activations) - before.live(MemoryCategory::activations) == 176);
      CHECK(s.live(MemoryCategory::gradients) - before.live(MemoryCategory::gradients) == 10);
      CHECK(s.live_bytes - before.live_bytes == 186);
      CHECK(current_memory_category() == MemoryCategory::gradients);
    }
    CHECK(current_memory_category() == MemoryCategory::activations);
    const MemoryStats s = memory_stats();
    CHECK(s.live_bytes - before.live_bytes == 176);
    CHECK(s.peak_bytes - before.live_bytes == 186);
    CHECK(s.peak(MemoryCategory::gradients) - before.live(MemoryCategory::gradients) == 10);
    Tensor view = a.slice(0, 5);  // views allocate nothing
    CHECK(memory_stats().live_bytes - before.live_bytes == 176);
  }
  CHECK(current_memory_category() == MemoryCategory::other);
  const MemoryStats after = memory_stats();
  CHECK(after.live_bytes == before.live_bytes);
  CHECK(after.live(MemoryCategory::activations) == before.live(MemoryCategory::activations));
  CHECK(after.peak_bytes - before.live_bytes == 186);
  reset_peak_memory();
  CHECK(memory_stats().peak_bytes == memory_stats().live_bytes);
  CHECK(memory_stats().peak(MemoryCategory::gradients) == memory_stats().live(MemoryCategory::gradients));
}

TEST_CASE("a storage outlives its views and is freed with the last one", "[memory]") {
  const std::int64_t base = memory_stats().live_bytes;
  Tensor view;
  {
    Tensor whole = Tensor::empty({100}, DType::f32);
    view = whole.slice(10, 20);
  }
  CHECK(memory_stats().live_bytes - base == 400);
  view = Tensor();
  CHECK(memory_stats().live_bytes == base);
}

TEST_CASE("zero-byte tensors are counted as zero and allocations are counted", "[memory]") {
  const MemoryStats before = memory_stats();
  Tensor t = Tensor::empty({0, 4});
  CHECK(memory_stats().live_bytes == before.live_bytes);
  CHECK(memory_stats().allocations == before.allocations + 1);
  CHECK(memory_category_name(MemoryCategory::optimizer_state) == "optimizer_state");
}

TEST_CASE("the CPU allocator reuses freed large blocks and gives them back on empty_cache", "[memory]") {
  // scripts/test.sh --sanitize turns the cache off (LOOM_CPU_CACHE_MB=0) so that ASan sees every
  // use after free; then freed blocks must go straight back to the system.
  const char* limit = std::getenv("LOOM_CPU_CACHE_MB");
  const bool caching = limit == nullptr || std::string(limit) != "0";
  empty_cache();
  const MemoryStats start = memory_stats();
  const void* first = nullptr;
  {
    Tensor big = Tensor::empty({1000, 1000});  // 4 MB: a cached size
    first = big.data<float>();
    const MemoryStats held = memory_stats();
    CHECK(held.system_allocations == start.system_allocations + 1);
    CHECK(held.reserved_bytes >= start.reserved_bytes + 4000000);
    CHECK(held.reserved_bytes <= start.reserved_bytes + 4000000 + 4000000 / 8);  // rounding: under 1/8
  }
  const MemoryStats freed = memory_stats();
  CHECK(freed.live_bytes == start.live_bytes);
  if (!caching) {
    CHECK(freed.reserved_bytes == start.reserved_bytes);
    return;
  }
  CHECK(freed.reserved_bytes > start.reserved_bytes);  // kept in the cache
  {
    Tensor again = Tensor::empty({999, 1001});  // a slightly different size rounds to the same block
    CHECK(again.data<float>() == first);
    CHECK(memory_stats().system_allocations == freed.system_allocations);
    CHECK(memory_stats().live_bytes == start.live_bytes + 999 * 1001 * 4);  // live counts what was asked
  }
  empty_cache();
  CHECK(memory_stats().reserved_bytes == start.reserved_bytes);
  {
    Tensor small = Tensor::empty({100});  // small blocks are not cached: the C library recycles them
    CHECK(memory_stats().system_allocations == start.system_allocations + 2);
  }
  CHECK(memory_stats().reserved_bytes == start.reserved_bytes);
}

TEST_CASE("PinnedHostScope pins host memory only for a CUDA device", "[memory][pinned]") {
  CHECK_FALSE(pinned_host_active());
  for (Device device : {Device::cpu(), Device::sim()}) {
    const PinnedHostScope staging(device);
    CHECK_FALSE(pinned_host_active());
    const Tensor host = Tensor::empty({64});
    CHECK_FALSE(host.is_pinned());
    CHECK(host.to(Device::sim()).to(Device::cpu()).defined());
  }
  {
    const PinnedHostScope staging(Device::cuda());
    CHECK(pinned_host_active());
    {
      const PinnedHostScope nested(Device::cpu());  // scopes nest
      CHECK_FALSE(pinned_host_active());
    }
    CHECK(pinned_host_active());
    const Tensor on_device = Tensor::empty({4}, DType::f32, Device::sim());  // device memory stays as it is
    CHECK_FALSE(on_device.is_pinned());
    if (cuda_device_count() == 0) {
      // No GPU to pin for (a CPU-only build, or no device): a host allocation is a clear error.
      CHECK_THROWS_AS(Tensor::empty({64}), Error);
    }
  }
  CHECK_FALSE(pinned_host_active());
}
