#include <loom/core/device.h>

#include <charconv>

#include <loom/core/error.h>

#ifdef LOOM_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace loom {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    int index = -1;
    const auto digits = text.substr(5);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0) return cuda(index);
  }
  LOOM_THROW("bad device '", text, "' (expected cpu, cuda or cuda:N)");
}

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

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

}  // namespace loom
