// A profile is what the planners know about a model: an ordered chain of layers (or blocks), each
// with its forward and backward time, the activation bytes it keeps for backward, the bytes that
// cross the cut after it, and its parameter bytes, all measured at one micro-batch size.
//
// Times and activations scale linearly with the micro-batch size. A layer may carry extra
// measurements at other sizes; between measured sizes costs are interpolated linearly, outside
// them they are scaled in proportion to the nearest measurement. Parameter bytes never scale.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace loom::planner {

// Costs of one layer at one micro-batch size.
struct LayerCost {
  double forward_ms = 0;
  double backward_ms = 0;
  double activation_bytes = 0;  // output activations kept until backward (memory)
  double boundary_bytes = 0;    // bytes crossing the cut right after this layer (communication)
  // Version 2 of the JSON profile (`loom profile` measures them; older profiles lack them):
  double backward_input_ms = -1;        // its BI alone (zero-bubble kinds); < 0: unknown, backward_ms / 2
  double backward_weight_ms = -1;       // its BW alone; < 0: unknown, backward_ms / 2
  double forward_workspace_bytes = 0;   // held only while its forward runs, above what it keeps and outputs
  double backward_workspace_bytes = 0;  // held only while its backward runs, above what it kept
  double input_workspace_bytes = 0;     // held only while its BI runs, above what was held before
  double weight_workspace_bytes = 0;    // held only while its BW runs, above what was held before
  double split_held_bytes = 0;          // held from its BI to its BW above activation_bytes; negative: freed by BI
  // The part of activation_bytes that is its output kept by the next block's context (as its input): what
  // stays when this block is recomputed and the next one is not.
  double next_kept_bytes = 0;

  double input_ms() const { return backward_input_ms >= 0 ? backward_input_ms : backward_ms / 2; }
  double weight_ms() const { return backward_weight_ms >= 0 ? backward_weight_ms : backward_ms / 2; }
};

// Every number of a LayerCost by its JSON name, in the order the profile's checks report them. All of them
// grow with the micro-batch size (Profile::cost_at scales and interpolates each).
struct LayerCostField {
  enum class Kind {
    required,    // forward_ms, backward_ms, activation_bytes
    boundary,    // boundary_bytes: activation_bytes when absent
    split_time,  // backward_input_ms, backward_weight_ms: both or neither; unknown (< 0) when absent
    optional,    // version 2's bytes: 0 when absent
  };
  const char* name;
  double LayerCost::*member;
  bool milliseconds;  // else bytes
  Kind kind;
};
inline constexpr LayerCostField kLayerCostFields[] = {
    {"forward_ms", &LayerCost::forward_ms, true, LayerCostField::Kind::required},
    {"backward_ms", &LayerCost::backward_ms, true, LayerCostField::Kind::required},
    {"activation_bytes", &LayerCost::activation_bytes, false, LayerCostField::Kind::required},
    {"boundary_bytes", &LayerCost::boundary_bytes, false, LayerCostField::Kind::boundary},
    {"backward_input_ms", &LayerCost::backward_input_ms, true, LayerCostField::Kind::split_time},
    {"backward_weight_ms", &LayerCost::backward_weight_ms, true, LayerCostField::Kind::split_time},
    {"forward_workspace_bytes", &LayerCost::forward_workspace_bytes, false, LayerCostField::Kind::optional},
    {"backward_workspace_bytes", &LayerCost::backward_workspace_bytes, false, LayerCostField::Kind::optional},
    {"split_held_bytes", &LayerCost::split_held_bytes, false, LayerCostField::Kind::optional},
    {"input_workspace_bytes", &LayerCost::input_workspace_bytes, false, LayerCostField::Kind::optional},
    {"weight_workspace_bytes", &LayerCost::weight_workspace_bytes, false, LayerCostField::Kind::optional},
    {"next_kept_bytes", &LayerCost::next_kept_bytes, false, LayerCostField::Kind::optional},
};

struct Measurement {
  double microbatch = 0;
  LayerCost cost;
};

struct LayerProfile {
  std::string name;
  LayerCost cost;  // at Profile::microbatch
  double parameter_bytes = 0;
  std::vector<Measurement> extra;  // optional measurements at other micro-batch sizes
};

// A parameter two layers share (a word embedding and the output projection tied to it; the
// model's ParameterTie). Where one stage holds both layers the runtime keeps one tensor, so the
// copy adds its gradient only (no value, no optimizer state); on different stages each holds it
// whole (runtime/tied_parameters.h). Both layers' parameter_bytes count it.
struct LayerTie {
  int canonical_layer = 0, copy_layer = 0;
  double bytes = 0;  // of the shared parameter
};

struct Profile {
  std::string model;   // e.g. "bert-48"
  std::string source;  // the file it was read from, for messages
  std::string device;  // what it was measured on, when known ("V100", "cpu: 2 threads")
  std::string fingerprint;  // load_profile: FNV-1a of the file's text, 16 hex digits (a plan records it)
  // From `loom profile` (empty in graph.txt profiles and older ones): the preset's size, every setting
  // as --set takes them ("hidden=256,layers=4"), and the precision it was profiled at ("fp32").
  std::string model_size, model_settings, precision;
  double microbatch = 1;  // the micro-batch size the layer costs were measured at
  std::vector<LayerProfile> layers;
  std::vector<LayerTie> ties;  // from `loom profile` of loom's models; graph.txt profiles have none
  // Version 2, per micro-batch of `microbatch` samples (scaled linearly; 0 where a profile lacks them):
  double input_bytes = 0;   // the data's inputs, which the stage holding layer 0 keeps while in flight
  double target_bytes = 0;  // its targets, which the stage holding the last layer keeps
  double data_ms = 0;       // reading one micro-batch, part of the first stage's forward
  // One optimizer step's milliseconds per MB of parameters, by optimizer ("sgd": with momentum, as `loom
  // train` runs it; "adam"); an optimizer missing here costs nothing.
  std::map<std::string, double> step_ms_per_mb;

  int size() const { return static_cast<int>(layers.size()); }
  // The costs of `layer` at micro-batch size `microbatch` (see the scaling rule above).
  LayerCost cost_at(int layer, double microbatch) const;
  double parameter_bytes(int first, int last) const;  // sum over layers first..last
  double total_parameter_bytes() const;
  // step_ms_per_mb of `optimizer` (a loom train --optimizer: momentum counts as sgd, adamw as adam), or 0.
  double step_ms_per_mb_of(const std::string& optimizer) const;
};

// The ranges validate() accepts. Wide enough for any real model (a layer of 10^7 ms is 2.8 hours
// per micro-batch; 10^15 bytes is a petabyte), narrow enough that the planners' sums over every
// layer, replica and micro-batch stay finite and exact enough to compare (1e308 would not).
constexpr int kMaxProfileLayers = 100000;
constexpr double kMaxLayerMs = 1e7;
constexpr double kMaxLayerBytes = 1e15;
constexpr double kMinProfileMicrobatch = 1e-3;
constexpr double kMaxProfileMicrobatch = 1e9;

// Throws loom::Error naming the profile, the layer and the field when a cost or byte count lies
// outside [0, kMaxLayerMs] / [0, kMaxLayerBytes] (or is not finite), a micro-batch size lies outside
// [kMinProfileMicrobatch, kMaxProfileMicrobatch], there are more than kMaxProfileLayers layers, or
// a tie names a layer the profile does not have or bytes outside [0, kMaxLayerBytes].
void validate(const Profile& profile);

}  // namespace loom::planner
