// The roofline profile (see analytic_profile.h).
#include "analytic_profile.h"

namespace loom::apps {

namespace {

double bytes_of(const std::vector<Shape>& shapes) {
  double bytes = 0;
  for (const Shape& s : shapes) bytes += static_cast<double>(s.numel()) * 4;
  return bytes;
}

}  // namespace

planner::Profile analytic_profile(const ModelSpec& spec, std::int64_t microbatch, const planner::DeviceModel& device,
                                  bool half_precision) {
  const ModelSummary summary = summarize(spec, microbatch);
  planner::Profile profile;
  profile.model = spec.name;
  profile.microbatch = static_cast<double>(microbatch);
  profile.device = "analytic " + device.name + " roofline (" + (half_precision ? "half precision" : "fp32") + ")";
  for (std::size_t i = 0; i < summary.blocks.size(); ++i) {
    const BlockInfo& b = summary.blocks[i];
    const double parameters = static_cast<double>(summary.block_parameters[i]) * 4;
    const double moved = bytes_of(b.input_shapes) + static_cast<double>(b.output_bytes + b.activation_bytes);
    planner::LayerProfile layer;
    layer.name = b.name;
    layer.parameter_bytes = static_cast<double>(b.parameter_bytes);
    layer.cost.forward_ms = device.roofline_ms(b.flops, parameters + moved, half_precision);
    layer.cost.backward_ms = device.roofline_ms(2 * b.flops, 2 * parameters + moved, half_precision);
    layer.cost.activation_bytes = static_cast<double>(b.activation_bytes);
    layer.cost.boundary_bytes = static_cast<double>(b.output_bytes);
    profile.layers.push_back(std::move(layer));
  }
  return profile;
}

}  // namespace loom::apps
