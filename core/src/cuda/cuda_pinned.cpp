// Page-locked (pinned) host memory for host <-> device staging (memory.h, PinnedHostScope).
// A copy from pinned memory to a GPU is a DMA the host need not wait for, and a copy back is about
// twice as fast as through pageable memory (no bounce buffer). cudaHostAlloc is slow (it maps and
// locks pages), so freed blocks are cached; a block freed while a queued copy may still read it
// is reused only after the work queued before its release has run (a FencedBlockCache: one event
// per device in use, recorded on that device's loom stream when the block is freed). Blocks are
// rounded to 4 KiB pages and cached up to LOOM_PINNED_CACHE_MB (default 1024).
#include <memory>

#include <loom/core/cuda/context.h>
#include <loom/core/env.h>
#include <loom/base/error.h>
#include <loom/core/fenced_block_cache.h>

#include "backend.h"

namespace loom::cuda {

namespace {
std::size_t round_page(std::size_t bytes) { return (bytes + 4095) / 4096 * 4096; }

// Never destroyed: a tensor in a static object may be freed after static destruction began, and
// cudaFreeHost after the CUDA runtime has shut down fails.
// Nothing on the way from a tensor's destructor to here throws (the release below, the fences):
// after a kernel fault every CUDA call fails with the same sticky error, and a throw from a
// destructor would end the process before the first error, already on its way up, is printed.
// A failed cudaFreeHost leaks the block; a fence that cannot be recorded or queried never passes,
// so its block is never handed out again.
FencedBlockCache& cache() {
  static auto* blocks = new FencedBlockCache(
      static_cast<std::size_t>(env_count("LOOM_PINNED_CACHE_MB", 1024, 1 << 24)) << 20,
      [](void* block) { (void)cudaFreeHost(block); });
  return *blocks;
}

FencedBlockCache::Fence never_passes() {
  return [] { return false; };
}

// Passes once every device's stream has run what was queued on it before this call.
FencedBlockCache::Fence record_fence() {
  const std::vector<int> devices = devices_in_use();
  if (devices.empty()) return {};
  auto deleter = [](std::vector<cudaEvent_t>* events) {
    for (cudaEvent_t event : *events) (void)cudaEventDestroy(event);
    delete events;
  };
  std::shared_ptr<std::vector<cudaEvent_t>> events(new std::vector<cudaEvent_t>(), deleter);
  for (int device : devices) {
    cudaEvent_t event = nullptr;
    if (cudaSetDevice(device) != cudaSuccess || cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess)
      return never_passes();
    events->push_back(event);
    if (cudaEventRecord(event, existing_stream(device)) != cudaSuccess) return never_passes();
  }
  return [events] {
    for (cudaEvent_t event : *events)
      if (cudaEventQuery(event) != cudaSuccess) return false;  // not ready, or failed: never reused
    return true;
  };
}
}  // namespace

void* allocate_pinned(std::size_t bytes, std::size_t& block_bytes, bool& new_system_allocation) {
  block_bytes = round_page(bytes);
  new_system_allocation = false;
  if (block_bytes == 0) return nullptr;
  if (void* block = cache().take(block_bytes)) return block;
  void* block = nullptr;
  cudaError_t status = cudaHostAlloc(&block, block_bytes, cudaHostAllocPortable);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    cache().release(false);
    status = cudaHostAlloc(&block, block_bytes, cudaHostAllocPortable);
  }
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;  // memory.cpp names the rank, the category and the bytes
  }
  if (status != cudaSuccess)
    LOOM_THROW("cudaHostAlloc of ", block_bytes, " bytes of pinned host memory failed: ", cudaGetErrorString(status));
  new_system_allocation = true;
  return block;
}

std::int64_t deallocate_pinned(void* data, std::size_t bytes) {
  if (data == nullptr) return 0;
  return cache().give_back(data, round_page(bytes), record_fence());
}

std::int64_t release_pinned_cache() { return cache().release(false); }

}  // namespace loom::cuda
