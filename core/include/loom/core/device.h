// Where a tensor lives: the host ("cpu"), CUDA device N ("cuda:N"), or simulated device N ("sim:N").
//
// The sim device stands in for an accelerator on machines without one, so that tests prove on the
// CPU that the runtime keeps every tensor on its device and stages every host/device transfer:
// its memory comes from its own allocator and is charged to its own ledger (memory.h), the CPU
// kernels run on it (dispatch picks the CUDA backend only for cuda tensors), but it is not host
// memory: host-only code (file I/O, MPI host buffers, element access) rejects its tensors exactly
// as it rejects CUDA tensors (require_host in tensor.h), and `to(device)` / `copy_from` are the only
// way across. Code that stages for "a device" tests `!is_cpu()`, so the sim device and CUDA take
// the same path through it.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace loom {

enum class DeviceKind : unsigned char { cpu, cuda, sim };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }
  static Device sim(int index = 0) { return {DeviceKind::sim, index}; }
  bool is_cpu() const { return kind == DeviceKind::cpu; }  // host memory
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  bool is_sim() const { return kind == DeviceKind::sim; }
  std::string str() const;
  static Device parse(std::string_view text);  // "cpu", "cuda", "cuda:N", "sim", "sim:N"; throws loom::Error
  friend bool operator==(const Device& a, const Device& b) { return a.kind == b.kind && a.index == b.index; }
};

std::ostream& operator<<(std::ostream& out, const Device& device);

// True when this build has the CUDA backend compiled in.
bool cuda_compiled();
// Number of usable CUDA devices at run time (0 in a CPU-only build or without a GPU).
int cuda_device_count();
// Blocks until the work loom queued on `device` is done (a CUDA device's stream; cpu and sim
// compute synchronously: nothing to wait for). Timers around device work call it at both ends.
void synchronize(Device device);

// A `--device` flag: cpu, cuda, cuda:N, sim or sim:N, parsed once into a DeviceRequest. Plain
// "cuda" is GPU local_rank % (GPUs visible), so each rank of a node takes its own; plain "sim"
// likewise takes sim:(local_rank % LOOM_SIM_DEVICES), the number of sim devices a node pretends to
// have (default 1: all share one, as ranks share the GPU of a one-GPU machine). Errors name
// --device and say why: parse_device_request checks the text alone (malformed; no GPU query),
// resolve_device the machine (no CUDA backend in this build, no GPU visible, cuda:N past the GPUs
// visible).
struct DeviceRequest {
  Device device;               // the kind, and the index when one was given
  bool by_local_rank = false;  // plain "cuda" or "sim": each rank's local rank picks the index
  std::string str() const;     // the flag as given: "cuda", "sim:1", ...
};
DeviceRequest parse_device_request(std::string_view text);
Device resolve_device(const DeviceRequest& request, int local_rank);
// The two steps at once, for flags used where they are read (bench, profile).
Device resolve_device_flag(std::string_view text, int local_rank);

}  // namespace loom
