// CUDA caching allocator: blocks are rounded to 512 bytes and kept in per-size free lists after
// release, so steady-state training does no cudaMalloc/cudaFree on the hot path. A miss that
// fails with out-of-memory releases the cache and retries once, then reports it (nullptr).
#include <map>
#include <mutex>
#include <vector>

#include <loom/core/cuda/context.h>
#include <loom/base/error.h>

#include "backend.h"

namespace loom::cuda {

namespace {
std::size_t round_block(std::size_t bytes) { return bytes == 0 ? 0 : (bytes + 511) / 512 * 512; }

struct Pool {
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> free_blocks;  // block size -> cached pointers
  std::int64_t cached_bytes = 0;
};

// Never destroyed: a tensor in a static object may be freed after static destruction began
// (a destroyed map would then be written to).
Pool& pool(int device) {
  static auto* pools = new std::map<int, Pool>();
  static auto* mutex = new std::mutex();
  std::lock_guard lock(*mutex);
  return (*pools)[device];
}
}  // namespace

void* allocate(int device, std::size_t bytes, std::size_t& block_bytes, bool& new_system_allocation) {
  block_bytes = round_block(bytes);
  new_system_allocation = false;
  if (block_bytes == 0) return nullptr;
  Pool& p = pool(device);
  {
    std::lock_guard lock(p.mutex);
    auto it = p.free_blocks.find(block_bytes);
    if (it != p.free_blocks.end() && !it->second.empty()) {
      void* data = it->second.back();
      it->second.pop_back();
      p.cached_bytes -= static_cast<std::int64_t>(block_bytes);
      return data;
    }
  }
  LOOM_CUDA_CHECK(cudaSetDevice(device));
  void* data = nullptr;
  cudaError_t status = cudaMalloc(&data, block_bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    release_cache(device);
    status = cudaMalloc(&data, block_bytes);
  }
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;  // memory.cpp names the rank, the category and the bytes
  }
  if (status != cudaSuccess)
    LOOM_THROW("cudaMalloc of ", block_bytes, " bytes on cuda:", device, " failed: ", cudaGetErrorString(status));
  new_system_allocation = true;
  return data;
}

void memory_info(int device, std::int64_t& free_bytes, std::int64_t& total_bytes) {
  LOOM_CUDA_CHECK(cudaSetDevice(device));
  std::size_t free = 0, total = 0;
  LOOM_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  free_bytes = static_cast<std::int64_t>(free);
  total_bytes = static_cast<std::int64_t>(total);
}

void deallocate(int device, void* data, std::size_t bytes) {
  if (!data) return;
  const std::size_t block_bytes = round_block(bytes);
  Pool& p = pool(device);
  std::lock_guard lock(p.mutex);
  p.free_blocks[block_bytes].push_back(data);
  p.cached_bytes += static_cast<std::int64_t>(block_bytes);
}

std::int64_t release_cache(int device) {
  Pool& p = pool(device);
  std::lock_guard lock(p.mutex);
  LOOM_CUDA_CHECK(cudaSetDevice(device));
  synchronize(device);
  std::int64_t released = 0;
  for (auto& [size, blocks] : p.free_blocks) {
    for (void* block : blocks) {
      LOOM_CUDA_CHECK(cudaFree(block));
      released += static_cast<std::int64_t>(size);
    }
    blocks.clear();
  }
  p.cached_bytes = 0;
  return released;
}

namespace {
// Makes `device`'s loom stream wait for what `source`'s loom stream has queued so far.
void order_after(int source, int device) {
  cudaEvent_t written = nullptr;
  cudaStream_t producer = stream(source);
  LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  const cudaError_t recorded = cudaEventRecord(written, producer);
  const cudaError_t ordered = recorded == cudaSuccess ? cudaStreamWaitEvent(stream(device), written, 0) : recorded;
  (void)cudaEventDestroy(written);  // the wait keeps what it needs
  LOOM_CUDA_CHECK(ordered);
}
}  // namespace

// A copy runs on the destination GPU's stream (the source's for device -> host). Between two GPUs
// that stream first waits for the source GPU's: the kernels writing the source run there.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes, bool wait) {
  const int device = dst_device.is_cuda() ? dst_device.index : src_device.index;
  if (dst_device.is_cuda() && src_device.is_cuda() && src_device.index != dst_device.index)
    order_after(src_device.index, device);
  cudaStream_t s = stream(device);
  LOOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  if (wait) LOOM_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace loom::cuda
