// Measured memory: every tensor allocation goes through a per-device allocator that keeps live and
// peak bytes, in total and per category. Schedules are compared on these numbers, so they are exact:
// they count the bytes tensors asked for (not allocator rounding or cached blocks, which both the
// CPU and the CUDA caching allocators report separately as reserved bytes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <loom/core/device.h>

namespace loom {

enum class MemoryCategory : std::uint8_t {
  parameters,
  gradients,
  optimizer_state,
  activations,
  communication,
  workspace,
  other,
};
inline constexpr std::size_t kMemoryCategoryCount = 7;
std::string_view memory_category_name(MemoryCategory category);

struct MemoryStats {
  std::int64_t live_bytes = 0;
  std::int64_t peak_bytes = 0;
  std::array<std::int64_t, kMemoryCategoryCount> live_by_category{};
  std::array<std::int64_t, kMemoryCategoryCount> peak_by_category{};
  std::int64_t reserved_bytes = 0;   // bytes held from the system (cached free blocks included)
  std::int64_t allocations = 0;      // tensor allocations served
  std::int64_t system_allocations = 0;  // calls into malloc/cudaMalloc (allocations the cache missed)

  std::int64_t live(MemoryCategory c) const { return live_by_category[static_cast<std::size_t>(c)]; }
  std::int64_t peak(MemoryCategory c) const { return peak_by_category[static_cast<std::size_t>(c)]; }
};

MemoryStats memory_stats(Device device = Device::cpu());
// Peak values (total and per category) drop to the current live values.
void reset_peak_memory(Device device = Device::cpu());
// Give cached free blocks back to the system (on the CPU: blocks of 256 KiB and more, cached up to
// LOOM_CPU_CACHE_MB, default 2048).
void empty_cache(Device device = Device::cpu());

// The category new allocations on this thread are charged to (default: other).
MemoryCategory current_memory_category();

// Sets the category for allocations made in its scope, restoring the previous one after.
class MemoryCategoryScope {
 public:
  explicit MemoryCategoryScope(MemoryCategory category);
  ~MemoryCategoryScope();
  MemoryCategoryScope(const MemoryCategoryScope&) = delete;
  MemoryCategoryScope& operator=(const MemoryCategoryScope&) = delete;

 private:
  MemoryCategory previous_;
};

// A meta build: while a MetaScope is alive on a thread, the tensors that thread creates have a
// shape, a dtype and a byte count but no memory (nothing is allocated or charged to the ledger),
// so a paper-size model can be built to count its parameters and infer its shapes. Reading or
// writing a meta tensor's data is a loom::Error.
class MetaScope {
 public:
  MetaScope();
  ~MetaScope();
  MetaScope(const MetaScope&) = delete;
  MetaScope& operator=(const MetaScope&) = delete;

 private:
  bool previous_;
};
bool meta_build_active();

// Host staging for a GPU: while a PinnedHostScope(device) with a CUDA `device` is alive on a
// thread, that thread's host (cpu) allocations come from page-locked memory (cudaHostAlloc, cached;
// charged to the host's ledger like any host tensor). A copy from such a tensor to the GPU is
// queued without waiting (ops::copy), and one back to it is a direct DMA. The runtime opens it
// where it stages for a device: the data readers' batches, the host side of host-staged stage
// boundaries and gradient buckets. With any other device it does nothing, so callers need not ask.
// A pinned tensor must not be written by the host while a copy from it may be queued (a fresh
// tensor is safe: a freed pinned block is reused only once the device work queued before its
// release has run, fenced_block_cache.h).
class PinnedHostScope {
 public:
  explicit PinnedHostScope(Device device);
  ~PinnedHostScope();
  PinnedHostScope(const PinnedHostScope&) = delete;
  PinnedHostScope& operator=(const PinnedHostScope&) = delete;

 private:
  bool previous_;
};
bool pinned_host_active();

// One allocation owned by a Storage; the allocator returns it to its pool on destruction.
struct Allocation {
  void* data = nullptr;
  std::size_t bytes = 0;
  Device device;
  MemoryCategory category = MemoryCategory::other;
  bool meta = false;  // made under a MetaScope: no memory behind it
  bool pinned = false;  // page-locked host memory (PinnedHostScope)
};

// Allocates `bytes` on `device`, charged to the current category. Zero bytes is valid.
Allocation allocate(Device device, std::size_t bytes);
void deallocate(const Allocation& allocation);

}  // namespace loom
