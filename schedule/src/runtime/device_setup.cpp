// The Trainer's device choice (see device_setup.h).
#include "device_setup.h"

#include <loom/core/error.h>

namespace loom::runtime::detail {

namespace {
Device parse_device(const std::string& text) {
  try {
    return Device::parse(text);
  } catch (const Error&) {
    LOOM_THROW("--device '", text, "': expected cpu, cuda, cuda:N, sim or sim:N");
  }
}
}  // namespace

void validate_device(const std::string& text) { parse_device(text); }

Device resolve_device(const std::string& text, int local_rank) {
  const Device device = parse_device(text);
  if (!device.is_cuda()) return device;
  LOOM_CHECK(cuda_compiled(), "--device ", text, ": this build of loom has no CUDA backend (configure with -DLOOM_CUDA=ON)");
  const int gpus = cuda_device_count();
  LOOM_CHECK(gpus > 0, "--device ", text, ": no CUDA device is visible (check CUDA_VISIBLE_DEVICES and the driver)");
  if (text == "cuda") return Device::cuda(local_rank % gpus);
  LOOM_CHECK(device.index < gpus, "--device ", text, ": only ", gpus, gpus == 1 ? " CUDA device is" : " CUDA devices are",
             " visible (cuda:0 to cuda:", gpus - 1, ")");
  return device;
}

std::string transfer_path(Device device, int ranks_on_node) {
  if (device.is_cpu()) return "device cpu: stage boundaries and the gradient allreduce move host memory over MPI";
  std::string why = device.is_sim() ? "the sim device has no device-to-device transport"
                                    : "NCCL is not on the Trainer's path yet";
  if (device.is_cuda() && ranks_on_node > cuda_device_count())
    why = std::to_string(ranks_on_node) + " ranks of this node share " + std::to_string(cuda_device_count()) +
          " GPU(s), and NCCL cannot put two ranks of one communicator on one GPU";
  return loom::detail::concat("device ", device.str(),
                              ": stage boundaries and the gradient allreduce are host-staged over MPI "
                              "(device -> host -> device), because ",
                              why);
}

}  // namespace loom::runtime::detail
