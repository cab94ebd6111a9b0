// Per-device allocation accounting. Live/peak bytes count exactly what tensors asked for, per
// category; `reserved_bytes` is what the allocator holds from the system (the CUDA cache included).
#include <loom/core/memory.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include <loom/core/device_memory.h>
#include <loom/base/error.h>

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
thread_local bool t_pinned = false;

[[maybe_unused]] [[noreturn]] void no_cuda(Device device) {
  LOOM_THROW("tensor on ", device.str(), " but this build of loom has no CUDA backend (configure with -DLOOM_CUDA=ON)");
}

std::string mebibytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

DeviceMemoryInfo host_memory_info() {
  DeviceMemoryInfo info;
  info.host = true;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    std::int64_t kb = 0;
    meminfo >> kb;
    if (key == "MemAvailable:") info.free_bytes = kb * 1024;
    if (key == "MemTotal:") info.total_bytes = kb * 1024;
    meminfo.ignore(64, '\n');
  }
  return info;
}

// An allocation the device could not hold: one error (LOOM_THROW adds the rank) with the device,
// the bytes and the category asked for, what loom's tensors hold there by category, and what the device says.
[[noreturn]] void out_of_memory(Device device, std::size_t bytes, MemoryCategory category) {
  MemoryStats stats;
  {
    std::lock_guard lock(g_mutex);
    stats = ledger(device).stats;
  }
  std::string held;
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
    if (stats.live_by_category[c] > 0)
      held += detail::concat(held.empty() ? "" : ", ", memory_category_name(static_cast<MemoryCategory>(c)), " ",
                             mebibytes(static_cast<double>(stats.live_by_category[c])));
  const DeviceMemoryInfo info = device_memory_info(device);
  LOOM_THROW("out of memory on ", device.str(),
             ": ", bytes, " bytes (", mebibytes(static_cast<double>(bytes)), ") for ", memory_category_name(category),
             " did not fit; loom's tensors there hold ", mebibytes(static_cast<double>(stats.live_bytes)),
             held.empty() ? "" : " (" + held + ")", " and the device has ", mebibytes(static_cast<double>(info.free_bytes)),
             " free of ", mebibytes(static_cast<double>(info.total_bytes)),
             ": use more stages, fewer or smaller micro-batches, --recompute or a smaller model");
}

}  // namespace

DeviceMemoryInfo device_memory_info(Device device) {
  if (device.is_sim()) {
    const std::int64_t capacity = sim::capacity_bytes();
    if (capacity == 0) return host_memory_info();
    return {capacity - sim::held_bytes(), capacity};
  }
  if (device.is_cuda()) {
#ifdef LOOM_WITH_CUDA
    DeviceMemoryInfo info;
    cuda::memory_info(device.index, info.free_bytes, info.total_bytes);
    return info;
#else
    no_cuda(device);
#endif
  }
  return host_memory_info();
}

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

PinnedHostScope::PinnedHostScope(Device device) : previous_(t_pinned) { t_pinned = device.is_cuda(); }
PinnedHostScope::~PinnedHostScope() { t_pinned = previous_; }
bool pinned_host_active() { return t_pinned; }

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
#ifdef LOOM_WITH_CUDA
    released += cuda::release_pinned_cache();
#endif
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
  if (device.is_cpu() && t_pinned) {
#ifdef LOOM_WITH_CUDA
    allocation.data = cuda::allocate_pinned(bytes, reserved, system_allocation);
    allocation.pinned = true;
#else
    no_cuda(Device::cuda());
#endif
  } else if (device.is_cpu()) {
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
  if (allocation.data == nullptr && bytes > 0) out_of_memory(device, bytes, allocation.category);
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
  if (allocation.pinned) {
#ifdef LOOM_WITH_CUDA
    released = cuda::deallocate_pinned(allocation.data, allocation.bytes);
#endif
  } else if (allocation.device.is_cpu()) {
    released = cpu::deallocate(allocation.data, allocation.bytes);
  } else if (allocation.device.is_sim()) {
    released = sim::deallocate(allocation.data, allocation.bytes);
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
