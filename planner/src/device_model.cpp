// The analytic device table (see device_model.h). Figures: NVIDIA's data sheets for the SXM parts.
#include <loom/planner/device_model.h>

#include <algorithm>

#include <loom/base/error.h>

namespace loom::planner {

double DeviceModel::roofline_ms(double flops, double bytes, bool half_precision) const {
  const double peak = half_precision ? bf16_flops : fp32_flops;
  return std::max(flops / peak, bytes / bandwidth) * 1e3;
}

const std::vector<DeviceModel>& device_models() {
  static const std::vector<DeviceModel> models{
      {"v100", "NVIDIA V100 SXM2 32 GB", 15.7e12, 125e12, 900e9, 32e9},
      {"a100", "NVIDIA A100 SXM4 80 GB", 19.5e12, 312e12, 2039e9, 80e9},
      {"h100", "NVIDIA H100 SXM5 80 GB", 67e12, 989e12, 3350e9, 80e9},
      {"h200", "NVIDIA H200 SXM 141 GB", 67e12, 989e12, 4800e9, 141e9},
  };
  return models;
}

const DeviceModel& find_device_model(const std::string& name) {
  for (const DeviceModel& d : device_models())
    if (d.name == name) return d;
  LOOM_THROW("--device-model: '", excerpt(name), "' is not a device model (expected v100, a100, h100 or h200)");
}

}  // namespace loom::planner
