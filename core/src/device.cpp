#include <loom/core/device.h>

#include <algorithm>
#include <charconv>

#include <loom/core/env.h>
#include <loom/base/error.h>

#ifdef LOOM_WITH_CUDA
#include <cuda_runtime.h>

#include <loom/core/cuda/context.h>
#endif

namespace loom {

std::string Device::str() const {
  switch (kind) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::cuda: return "cuda:" + std::to_string(index);
    case DeviceKind::sim: return "sim:" + std::to_string(index);
  }
  return "?";
}

namespace {
// "cuda" / "cuda:N" (and "sim" / "sim:N"): the index, 0 when absent, -1 when malformed or another kind.
int parse_index(std::string_view text, std::string_view kind) {
  if (text == kind) return 0;
  if (!text.starts_with(kind) || text.size() <= kind.size() + 1 || text[kind.size()] != ':') return -1;
  int index = -1;
  const auto digits = text.substr(kind.size() + 1);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  return ec == std::errc() && end == digits.data() + digits.size() && index >= 0 ? index : -1;
}
}  // namespace

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (const int index = parse_index(text, "cuda"); index >= 0) return cuda(index);
  if (const int index = parse_index(text, "sim"); index >= 0) return sim(index);
  LOOM_THROW("bad device '", text, "' (expected cpu, cuda, cuda:N, sim or sim:N)");
}

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

DeviceRequest parse_device_request(std::string_view text) {
  try {
    return {Device::parse(text), text == "cuda" || text == "sim"};
  } catch (const Error&) {
    LOOM_THROW("--device '", text, "': expected cpu, cuda, cuda:N, sim or sim:N");
  }
}

std::string DeviceRequest::str() const {
  if (!by_local_rank) return device.str();
  return device.is_cuda() ? "cuda" : "sim";
}

Device resolve_device(const DeviceRequest& request, int local_rank) {
  const Device device = request.device;
  if (device.is_sim() && request.by_local_rank)
    return Device::sim(local_rank % static_cast<int>(std::max(1LL, env_count("LOOM_SIM_DEVICES", 1, 1 << 16))));
  if (!device.is_cuda()) return device;
  const std::string text = request.str();
  LOOM_CHECK(cuda_compiled(), "--device ", text, ": this build of loom has no CUDA backend (configure with -DLOOM_CUDA=ON)");
  const int gpus = cuda_device_count();
  LOOM_CHECK(gpus > 0, "--device ", text, ": no CUDA device is visible (check CUDA_VISIBLE_DEVICES and the driver)");
  if (request.by_local_rank) return Device::cuda(local_rank % gpus);
  LOOM_CHECK(device.index < gpus, "--device ", text, ": only ", gpus, gpus == 1 ? " CUDA device is" : " CUDA devices are",
             " visible (cuda:0 to cuda:", gpus - 1, ")");
  return device;
}

Device resolve_device_flag(std::string_view text, int local_rank) {
  return resolve_device(parse_device_request(text), local_rank);
}

bool cuda_compiled() {
#ifdef LOOM_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef LOOM_WITH_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

void synchronize(Device device) {
#ifdef LOOM_WITH_CUDA
  if (device.is_cuda()) cuda::synchronize(device.index);
#else
  (void)device;
#endif
}

}  // namespace loom
