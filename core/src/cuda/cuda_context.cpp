#include <loom/core/cuda/context.h>

#include <array>
#include <atomic>
#include <mutex>

#include <loom/base/error.h>

namespace loom::cuda {

namespace {
constexpr int kMaxDevices = 64;

struct DeviceHandles {
  std::once_flag once;
  std::atomic<bool> ready{false};
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
};

std::array<DeviceHandles, kMaxDevices>& handles() {
  static std::array<DeviceHandles, kMaxDevices> all;
  return all;
}

DeviceHandles& get(int device) {
  LOOM_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " out of range");
  LOOM_CUDA_CHECK(cudaSetDevice(device));
  DeviceHandles& h = handles()[device];
  std::call_once(h.once, [&h] {
    LOOM_CUDA_CHECK(cudaStreamCreateWithFlags(&h.stream, cudaStreamNonBlocking));
    LOOM_CUBLAS_CHECK(cublasCreate(&h.cublas));
    LOOM_CUBLAS_CHECK(cublasSetStream(h.cublas, h.stream));
    LOOM_CUDNN_CHECK(cudnnCreate(&h.cudnn));
    LOOM_CUDNN_CHECK(cudnnSetStream(h.cudnn, h.stream));
    h.ready = true;
  });
  return h;
}
}  // namespace

cudaStream_t stream(int device) { return get(device).stream; }
cublasHandle_t cublas(int device) { return get(device).cublas; }
cudnnHandle_t cudnn(int device) { return get(device).cudnn; }
void synchronize(int device) { LOOM_CUDA_CHECK(cudaStreamSynchronize(stream(device))); }

cudaStream_t existing_stream(int device) noexcept {
  if (device < 0 || device >= kMaxDevices || !handles()[device].ready) return nullptr;
  return handles()[device].stream;
}

std::vector<int> devices_in_use() {
  std::vector<int> devices;
  for (int d = 0; d < kMaxDevices; ++d)
    if (handles()[d].ready) devices.push_back(d);
  return devices;
}

}  // namespace loom::cuda
