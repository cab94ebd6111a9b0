// What a device has: the bytes free now and in all. CPU: MemAvailable and MemTotal of
// /proc/meminfo; sim: LOOM_SIM_MEMORY_MB less what the sim device holds (unset: the host's
// figures); cuda: cudaMemGetInfo. The out-of-memory error of allocate() (memory.h) reports it
// next to loom's own accounting.
#pragma once

#include <cstdint>

#include <loom/core/device.h>

namespace loom {

struct DeviceMemoryInfo {
  std::int64_t free_bytes = 0;
  std::int64_t total_bytes = 0;  // 0: not known
  // The figures are the host's (cpu, or sim without LOOM_SIM_MEMORY_MB): every process on the
  // node draws on them. False for a GPU (shared by the processes using it) and a sim capacity
  // (each process has its own).
  bool host = false;
};

DeviceMemoryInfo device_memory_info(Device device);

}  // namespace loom
