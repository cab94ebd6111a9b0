// Per-device allocation accounting. Live/peak bytes count exactly what tensors asked for, per
// category; `reserved_bytes` is what the allocator holds from the system (the CUDA cache included).
#include <loom/core/memory.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include <loom/core/error.h>

#include "backend.h"

namespace loom {

namespace {

struct DeviceLedger {
  MemoryStats stats;
};

std::mutex g_mutex;
std::map<std::pair<int, int>, DeviceLedger>& ledgers() {
  static std::map<std::pair<int, int>, DeviceLedger> map;
  return map;
}
DeviceLedger& ledger(Device device) {
  return ledgers()[{static_cast<int>(device.kind), device.index}];
}

thread_local MemoryCategory t_category = MemoryCategory::other;
thread_local bool t_meta = false;

[[maybe_unused]] [[noreturn]] void no_cuda(Device device) {
  LOOM_THROW("tensor on ", device.str(), " but this build of loom has no CUDA backend (configure with -DLOOM_CUDA=ON)");
}

}  // namespace

std::string_view memory_category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::parameters: return "parameters";
    case MemoryCategory::gradients: return "gradients";
    case MemoryCategory::optimizer_state: return "optimizer_state";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::communication: return "communication";
    case MemoryCategory::workspace: return "workspace";
    case MemoryCategory::other: return "other";
  }
  return "?";
}

MemoryCategory current_memory_category() { return t_category; }

MemoryCategoryScope::MemoryCategoryScope(MemoryCategory category) : previous_(t_category) { t_category = category; }
MemoryCategoryScope::~MemoryCategoryScope() { t_category = previous_; }

MetaScope::MetaScope() : previous_(t_meta) { t_meta = true; }
MetaScope::~MetaScope() { t_meta = previous_; }
bool meta_build_active() { return t_meta; }

MemoryStats memory_stats(Device device) {
  std::lock_guard lock(g_mutex);
  return ledger(device).stats;
}

void reset_peak_memory(Device device) {
  std::lock_guard lock(g_mutex);
  MemoryStats& s = ledger(device).stats;
  s.peak_bytes = s.live_bytes;
  s.peak_by_category = s.live_by_category;
}

void empty_cache(Device device) {
  std::int64_t released = 0;
  if (device.is_cpu()) {
    released = cpu::release_cache();
  } else if (device.is_sim()) {
    return;  // the sim allocator caches nothing
  } else {
#ifdef LOOM_WITH_CUDA
    released = cuda::release_cache(device.index);
#else
    no_cuda(device);
#endif
  }
  std::lock_guard lock(g_mutex);
  ledger(device).stats.reserved_bytes -= released;
}

Allocation allocate(Device device, std::size_t bytes) {
  Allocation allocation{nullptr, bytes, device, t_category};
  if (t_meta) {
    allocation.meta = true;
    return allocation;
  }
  std::size_t reserved = 0;
  bool system_allocation = true;
  if (device.is_cpu()) {
    allocation.data = cpu::allocate(bytes, reserved, system_allocation);
  } else if (device.is_sim()) {
    allocation.data = sim::allocate(bytes, reserved);
    system_allocation = bytes > 0;
  } else {
#ifdef LOOM_WITH_CUDA
    allocation.data = cuda::allocate(device.index, bytes, reserved, system_allocation);
#else
    no_cuda(device);
#endif
  }
  std::lock_guard lock(g_mutex);
  MemoryStats& s = ledger(device).stats;
  const auto c = static_cast<std::size_t>(allocation.category);
  s.live_bytes += static_cast<std::int64_t>(bytes);
  s.live_by_category[c] += static_cast<std::int64_t>(bytes);
  if (s.live_bytes > s.peak_bytes) s.peak_bytes = s.live_bytes;
  if (s.live_by_category[c] > s.peak_by_category[c]) s.peak_by_category[c] = s.live_by_category[c];
  s.allocations += 1;
  if (system_allocation) {
    s.system_allocations += 1;
    s.reserved_bytes += static_cast<std::int64_t>(reserved);
  }
  return allocation;
}

void deallocate(const Allocation& allocation) {
  if (allocation.meta) return;
  std::int64_t released = 0;
  if (allocation.device.is_cpu()) {
    released = cpu::deallocate(allocation.data, allocation.bytes);
  } else if (allocation.device.is_sim()) {
    if (allocation.data != nullptr) {
      sim::deallocate(allocation.data);
      released = static_cast<std::int64_t>((allocation.bytes + 63) / 64 * 64);
    }
  } else {
#ifdef LOOM_WITH_CUDA
    cuda::deallocate(allocation.device.index, allocation.data, allocation.bytes);
#endif
  }
  std::lock_guard lock(g_mutex);
  MemoryStats& s = ledger(allocation.device).stats;
  const auto c = static_cast<std::size_t>(allocation.category);
  s.live_bytes -= static_cast<std::int64_t>(allocation.bytes);
  s.live_by_category[c] -= static_cast<std::int64_t>(allocation.bytes);
  s.reserved_bytes -= released;
}

}  // namespace loom
