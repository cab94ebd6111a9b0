// The sim device's allocator: host memory, but its own (no cache shared with the CPU allocator,
// its own ledger in memory.cpp), and every block starts as 0xff bytes, a NaN in f32, f64, bf16 and
// f16, so a kernel or a transfer that reads memory it never wrote shows up in the numbers instead
// of reading last step's values from a recycled block. LOOM_SIM_MEMORY_MB gives it a size, so that
// running out of device memory can be tested without a GPU.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <loom/core/env.h>

#include "../backend.h"

namespace loom::sim {

namespace {
constexpr std::size_t kAlignment = 64;
std::atomic<std::int64_t> g_held{0};

std::size_t block_size(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

std::int64_t capacity_bytes() { return env_count("LOOM_SIM_MEMORY_MB", 0, std::int64_t{1} << 30) << 20; }

std::int64_t held_bytes() { return g_held.load(); }

void* allocate(std::size_t bytes, std::size_t& block_bytes) {
  block_bytes = block_size(bytes);
  if (block_bytes == 0) return nullptr;
  const std::int64_t capacity = capacity_bytes();
  if (capacity > 0 && g_held.load() + static_cast<std::int64_t>(block_bytes) > capacity) return nullptr;
  void* data = std::aligned_alloc(kAlignment, block_bytes);
  if (data == nullptr) return nullptr;
  std::memset(data, 0xff, block_bytes);
  g_held += static_cast<std::int64_t>(block_bytes);
  return data;
}

std::int64_t deallocate(void* data, std::size_t bytes) {
  if (data == nullptr) return 0;
  std::free(data);
  const auto released = static_cast<std::int64_t>(block_size(bytes));
  g_held -= released;
  return released;
}

}  // namespace loom::sim
