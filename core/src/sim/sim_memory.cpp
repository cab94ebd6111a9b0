// The sim device's allocator: host memory, but its own (no cache shared with the CPU allocator,
// its own ledger in memory.cpp), and every block starts as 0xff bytes, a NaN in f32, f64, bf16 and
// f16, so a kernel or a transfer that reads memory it never wrote shows up in the numbers instead
// of reading last step's values from a recycled block.
#include <cstdlib>
#include <cstring>

#include <loom/core/error.h>

#include "../backend.h"

namespace loom::sim {

namespace {
constexpr std::size_t kAlignment = 64;
}

void* allocate(std::size_t bytes, std::size_t& block_bytes) {
  block_bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (block_bytes == 0) return nullptr;
  void* data = std::aligned_alloc(kAlignment, block_bytes);
  LOOM_CHECK(data != nullptr, "out of memory on the sim device allocating ", bytes, " bytes");
  std::memset(data, 0xff, block_bytes);
  return data;
}

void deallocate(void* data) { std::free(data); }

}  // namespace loom::sim
