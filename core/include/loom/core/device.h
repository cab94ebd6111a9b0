// Where a tensor lives: the host, or CUDA device N. Text form "cpu" / "cuda:N".
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace loom {

enum class DeviceKind : unsigned char { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  std::string str() const;
  static Device parse(std::string_view text);  // throws loom::Error on bad text
  friend bool operator==(const Device& a, const Device& b) { return a.kind == b.kind && a.index == b.index; }
};

std::ostream& operator<<(std::ostream& out, const Device& device);

// True when this build has the CUDA backend compiled in.
bool cuda_compiled();
// Number of usable CUDA devices at run time (0 in a CPU-only build or without a GPU).
int cuda_device_count();

}  // namespace loom
