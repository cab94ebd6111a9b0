// Cost scaling across micro-batch sizes (linear, or piecewise linear through measurements).
#include <loom/planner/profile.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include <loom/schedule/text.h>

#include <loom/base/error.h>

namespace loom::planner {

namespace {

LayerCost scaled(const LayerCost& cost, double factor) {
  LayerCost out = cost;
  for (const LayerCostField& f : kLayerCostFields) out.*f.member = cost.*f.member * factor;
  return out;  // an unknown BI/BW (< 0) stays unknown
}

// Between two measurements; a BI/BW time known at one of them only is taken as the other's half B.
LayerCost mix(const LayerCost& a, const LayerCost& b, double t) {
  LayerCost out = a;
  for (const LayerCostField& f : kLayerCostFields) out.*f.member = a.*f.member + t * (b.*f.member - a.*f.member);
  if (a.backward_input_ms >= 0 || b.backward_input_ms >= 0) {
    out.backward_input_ms = a.input_ms() + t * (b.input_ms() - a.input_ms());
    out.backward_weight_ms = a.weight_ms() + t * (b.weight_ms() - a.weight_ms());
  }
  return out;
}

bool within(double x, double most) { return std::isfinite(x) && x >= 0 && x <= most; }

void check_value(const Profile& profile, int layer, const char* field, double value, double most,
                 const char* unit) {
  if (!within(value, most))
    LOOM_THROW(profile.source, ": layer ", layer, " (", schedule::excerpt(profile.layers[layer].name), "): ", field, " is ", value,
                 "; it must be finite, non-negative and at most ", most, " ", unit);
}

// Every field finite, non-negative and at most its limit, but split_held_bytes: a BI may free part of
// its block's activations (down to all of them).
void check_cost(const Profile& profile, int layer, const LayerCost& cost) {
  const bool split_known = cost.backward_input_ms >= 0 || cost.backward_weight_ms >= 0;
  for (const LayerCostField& f : kLayerCostFields)
    if ((f.kind != LayerCostField::Kind::split_time || split_known) && f.member != &LayerCost::split_held_bytes)
      check_value(profile, layer, f.name, cost.*f.member, f.milliseconds ? kMaxLayerMs : kMaxLayerBytes,
                  f.milliseconds ? "ms" : "bytes");
  const double held = cost.split_held_bytes;
  if (!std::isfinite(held) || held < -cost.activation_bytes || held > kMaxLayerBytes)
    LOOM_THROW(profile.source, ": layer ", layer, " (", schedule::excerpt(profile.layers[layer].name),
               "): split_held_bytes is ", held, "; it must be finite, at least minus its activation_bytes (",
               cost.activation_bytes, ") and at most ", kMaxLayerBytes, " bytes");
  if (cost.next_kept_bytes > cost.activation_bytes)
    LOOM_THROW(profile.source, ": layer ", layer, " (", schedule::excerpt(profile.layers[layer].name),
               "): next_kept_bytes is ", cost.next_kept_bytes, ", more than its activation_bytes ", cost.activation_bytes);
}

bool valid_microbatch(double size) {
  return std::isfinite(size) && size >= kMinProfileMicrobatch && size <= kMaxProfileMicrobatch;
}

}  // namespace

LayerCost Profile::cost_at(int layer, double size) const {
  const LayerProfile& lp = layers[layer];
  if (lp.extra.empty()) return scaled(lp.cost, size / microbatch);
  // The measured sizes nearest below and above `size` (the primary one and the extras, in any
  // order; a few points, so a scan, with nothing allocated: the planners call this in their loops).
  const Measurement primary{microbatch, lp.cost};
  const Measurement *lower = nullptr, *upper = nullptr;
  auto consider = [&](const Measurement& m) {
    if (m.microbatch <= size && (!lower || m.microbatch > lower->microbatch)) lower = &m;
    if (m.microbatch >= size && (!upper || m.microbatch < upper->microbatch)) upper = &m;
  };
  consider(primary);
  for (const Measurement& m : lp.extra) consider(m);
  if (!lower) return scaled(upper->cost, size / upper->microbatch);  // below every measured size
  if (!upper) return scaled(lower->cost, size / lower->microbatch);  // above every measured size
  if (upper->microbatch == lower->microbatch) return lower->cost;
  const double t = (size - lower->microbatch) / (upper->microbatch - lower->microbatch);
  return mix(lower->cost, upper->cost, t);
}

double Profile::parameter_bytes(int first, int last) const {
  double sum = 0;
  for (int l = first; l <= last; ++l) sum += layers[l].parameter_bytes;
  return sum;
}

double Profile::step_ms_per_mb_of(const std::string& optimizer) const {
  const std::string measured = optimizer == "momentum" ? "sgd" : optimizer == "adamw" ? "adam" : optimizer;
  const auto it = step_ms_per_mb.find(measured);
  return it == step_ms_per_mb.end() ? 0.0 : it->second;
}

double Profile::total_parameter_bytes() const { return layers.empty() ? 0 : parameter_bytes(0, size() - 1); }

void validate(const Profile& profile) {
  if (profile.layers.empty()) LOOM_THROW(profile.source, ": the profile has no layers");
  if (profile.size() > kMaxProfileLayers)
    LOOM_THROW(profile.source, ": the profile has ", profile.size(), " layers; at most ", kMaxProfileLayers,
                 " are supported");
  if (!valid_microbatch(profile.microbatch))
    LOOM_THROW(profile.source, ": the profiled micro-batch size must be positive, in [", kMinProfileMicrobatch,
                 ", ", kMaxProfileMicrobatch, "], got ", profile.microbatch);
  for (int l = 0; l < profile.size(); ++l) {
    const LayerProfile& lp = profile.layers[l];
    check_cost(profile, l, lp.cost);
    check_value(profile, l, "parameter_bytes", lp.parameter_bytes, kMaxLayerBytes, "bytes");
    std::vector<double> sizes{profile.microbatch};
    for (const Measurement& m : lp.extra) {
      if (!valid_microbatch(m.microbatch) || std::find(sizes.begin(), sizes.end(), m.microbatch) != sizes.end())
        LOOM_THROW(profile.source, ": layer ", l, " (", schedule::excerpt(lp.name),
                     "): each measurement needs its own positive micro-batch size, in [", kMinProfileMicrobatch,
                     ", ", kMaxProfileMicrobatch, "]");
      sizes.push_back(m.microbatch);
      check_cost(profile, l, m.cost);
    }
  }
  struct Bounded {
    const char* name;
    double value, most;
  };
  for (const Bounded& b : {Bounded{"input_bytes", profile.input_bytes, kMaxLayerBytes},
                           Bounded{"target_bytes", profile.target_bytes, kMaxLayerBytes},
                           Bounded{"data_ms", profile.data_ms, kMaxLayerMs}})
    if (!within(b.value, b.most))
      LOOM_THROW(profile.source, ": ", b.name, " is ", b.value, "; it must be finite, non-negative and at most ", b.most);
  for (const auto& [optimizer, ms] : profile.step_ms_per_mb)
    if (!within(ms, kMaxLayerMs))
      LOOM_THROW(profile.source, ": step_ms_per_mb.", schedule::excerpt(optimizer), " is ", ms,
                 "; it must be finite, non-negative and at most ", kMaxLayerMs);
  for (std::size_t t = 0; t < profile.ties.size(); ++t) {
    const LayerTie& tie = profile.ties[t];
    if (tie.canonical_layer < 0 || tie.canonical_layer >= profile.size() || tie.copy_layer < 0 ||
        tie.copy_layer >= profile.size())
      LOOM_THROW(profile.source, ": ties[", t, "] names layers ", tie.canonical_layer, " and ", tie.copy_layer,
                 " of a ", profile.size(), "-layer profile");
    if (!(tie.bytes >= 0 && tie.bytes <= kMaxLayerBytes))
      LOOM_THROW(profile.source, ": ties[", t, "].bytes must be in [0, ", kMaxLayerBytes, "], got ", tie.bytes);
  }
}

}  // namespace loom::planner
