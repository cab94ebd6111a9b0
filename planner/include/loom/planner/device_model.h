// Analytic accelerators for planning without the hardware: peak math throughput per precision and
// memory bandwidth, from the vendors' data sheets (dense, no sparsity). A block's time is its
// roofline: max(FLOPs / peak, bytes moved / bandwidth), a lower bound that real kernels approach
// within a factor the docs measure against the published V100 profiles (docs/models.md).
#pragma once

#include <string>
#include <vector>

namespace loom::planner {

struct DeviceModel {
  std::string name;            // "v100"
  std::string description;     // "NVIDIA V100 SXM2 32 GB"
  double fp32_flops = 0;       // FLOP/s with fp32 math (no tensor cores)
  double bf16_flops = 0;       // FLOP/s of the tensor cores in half precision (fp16 on V100)
  double bandwidth = 0;        // bytes/s of device memory
  double memory_bytes = 0;

  // Roofline time in ms of `flops` operations moving `bytes` bytes.
  double roofline_ms(double flops, double bytes, bool half_precision = false) const;
};

const std::vector<DeviceModel>& device_models();           // v100, a100, h100, h200
const DeviceModel& find_device_model(const std::string& name);  // loom::Error listing them if unknown

}  // namespace loom::planner
