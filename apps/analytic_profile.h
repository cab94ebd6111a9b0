// `loom profile --device-model NAME`: a model's profile on an accelerator loom does not have,
// from its meta build (models/model.h summarize: FLOPs and bytes per block) and the device's
// roofline (planner/device_model.h), so paper-size models can be planned without the hardware.
//   forward   max(F / peak, (parameters + input + output + saved activations) / bandwidth)
//   backward  max(2F / peak, (2 x parameters + input + output + saved activations) / bandwidth)
// (backward reads the weights and writes their gradients, reads the output gradient and the saved
// activations and writes the input gradient), in fp32 or, with half precision, on the tensor cores.
#pragma once

#include <loom/models/model.h>
#include <loom/planner/device_model.h>
#include <loom/planner/profile.h>

namespace loom::apps {

planner::Profile analytic_profile(const ModelSpec& spec, std::int64_t microbatch, const planner::DeviceModel& device,
                                  bool half_precision = false);

}  // namespace loom::apps
