// CPU allocator with a cache of large blocks. Small requests go straight to the C library, whose
// arenas already recycle them cheaply. Large ones (>= 256 KiB) are rounded to one of eight steps per
// power of two (at most 12.5 % more) and, when freed, kept in per-size free lists instead of going
// back to the kernel: glibc returns blocks this large with munmap, so every training step would
// otherwise fault in and zero its activations and receive buffers again (comm measured 64 MB
// receives 3-4x slower than raw MPI from those page faults). The cache is bounded by
// LOOM_CPU_CACHE_MB; by default a quarter of the host's memory shared by its local ranks, at least
// 2 GiB (a fixed 2 GiB let VGG-16 at batch 32, 3.9 GB at its peak, fault and zero 13-17% of its
// step back in every step). Blocks that do not fit go back to the system.
//
// Smaller blocks come from glibc's heap, which gives its top back to the kernel once 128 KiB are
// free there. Its threshold rises only when a block it mmapped is freed, which the cache above
// keeps from happening, so each pass's small tensors were faulted back in, page by page: gnmt16
// (--size cpu, micro-batch 16, one thread) read 17.4-17.7 ms per forward in `loom profile` and
// 14.7-18.3 ms in training from process to process. The first allocation therefore fixes glibc's
// thresholds (only where the cache is on): 64 MiB free at the heap's top before it is trimmed
// (M_TRIM_THRESHOLD), and blocks below the cache's 256 KiB from the heap, not mmapped afresh
// each time (M_MMAP_THRESHOLD; fixing one threshold stops glibc moving the other). The profile
// then reads 14.8 ms, as training does (docs/core.md).
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <loom/base/error.h>
#include <loom/core/threads.h>

#include "backend.h"

namespace loom::cpu {

namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::size_t kLargeBlock = std::size_t{256} << 10;
constexpr int kTrimThreshold = 64 << 20;

std::size_t round_block(std::size_t bytes) {
  const std::size_t aligned = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (aligned < kLargeBlock) return aligned;
  std::size_t power = kLargeBlock;
  while (power * 2 <= aligned) power *= 2;
  const std::size_t step = power / 8;
  return (aligned + step - 1) / step * step;
}

// A quarter of the host's physical memory over the ranks that share it (local_rank_count(); 1
// without one), and at least 2 GiB.
std::int64_t default_cache_limit_bytes() {
  constexpr std::int64_t kAtLeast = std::int64_t{2048} << 20;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return kAtLeast;
  const std::int64_t share = static_cast<std::int64_t>(pages) * page / 4 / std::max(1, local_rank_count());
  return std::max(kAtLeast, share);
}

std::int64_t cache_limit_bytes() {
  const char* text = std::getenv("LOOM_CPU_CACHE_MB");
  if (text == nullptr || *text == '\0') return default_cache_limit_bytes();
  try {
    std::size_t used = 0;
    const long long mb = std::stoll(text, &used);
    if (used == std::string(text).size() && mb >= 0) return static_cast<std::int64_t>(mb) << 20;
  } catch (const std::exception&) {
  }
  LOOM_THROW("LOOM_CPU_CACHE_MB must be a non-negative whole number of MiB, got '", text, "'");
}

struct Cache {
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> free_blocks;  // block size -> cached pointers
  std::int64_t cached_bytes = 0;
  std::int64_t limit = cache_limit_bytes();
};

// Never destroyed: tensors in other static objects may be freed after static destruction began,
// and cached blocks stay reachable (not leaks) to LeakSanitizer at exit.
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

// Once per process: glibc keeps up to kTrimThreshold free at its heap's top, and serves blocks
// below kLargeBlock from its heap (see the top).
void keep_heap() {
  static const bool kept = [] {
    return cache().limit > 0 && ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1 &&
           ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(kLargeBlock)) == 1;
  }();
  (void)kept;
}

}  // namespace

void* allocate(std::size_t bytes, std::size_t& block_bytes, bool& new_system_allocation) {
  keep_heap();
  block_bytes = bytes == 0 ? 0 : round_block(bytes);
  new_system_allocation = false;
  if (block_bytes == 0) return nullptr;
  if (block_bytes >= kLargeBlock) {
    Cache& c = cache();
    std::lock_guard lock(c.mutex);
    auto it = c.free_blocks.find(block_bytes);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* data = it->second.back();
      it->second.pop_back();
      c.cached_bytes -= static_cast<std::int64_t>(block_bytes);
      return data;
    }
  }
  void* data = std::aligned_alloc(kAlignment, block_bytes);
  if (data == nullptr && block_bytes >= kLargeBlock) {
    release_cache();
    data = std::aligned_alloc(kAlignment, block_bytes);
  }
  LOOM_CHECK(data != nullptr, "out of host memory allocating ", bytes, " bytes");
  new_system_allocation = true;
  return data;
}

std::int64_t deallocate(void* data, std::size_t bytes) {
  if (data == nullptr) return 0;
  const std::size_t block_bytes = round_block(bytes);
  if (block_bytes >= kLargeBlock) {
    Cache& c = cache();
    std::lock_guard lock(c.mutex);
    if (c.cached_bytes + static_cast<std::int64_t>(block_bytes) <= c.limit) {
      c.free_blocks[block_bytes].push_back(data);
      c.cached_bytes += static_cast<std::int64_t>(block_bytes);
      return 0;
    }
  }
  std::free(data);
  return static_cast<std::int64_t>(block_bytes);
}

std::int64_t release_cache() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  std::int64_t released = 0;
  for (auto& [size, blocks] : c.free_blocks) {
    for (void* block : blocks) std::free(block);
    released += static_cast<std::int64_t>(size * blocks.size());
    blocks.clear();
  }
  c.cached_bytes = 0;
  return released;
}

}  // namespace loom::cpu
