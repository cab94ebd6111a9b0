// A profile is what the planners know about a model: an ordered chain of layers (or blocks), each
// with its forward and backward time, the activation bytes it keeps for backward, the bytes that
// cross the cut after it, and its parameter bytes, all measured at one micro-batch size.
//
// Times and activations scale linearly with the micro-batch size. A layer may carry extra
// measurements at other sizes; between measured sizes costs are interpolated linearly, outside
// them they are scaled in proportion to the nearest measurement. Parameter bytes never scale.
#pragma once

#include <string>
#include <vector>

namespace loom::planner {

// Costs of one layer at one micro-batch size.
struct LayerCost {
  double forward_ms = 0;
  double backward_ms = 0;
  double activation_bytes = 0;  // output activations kept until backward (memory)
  double boundary_bytes = 0;    // bytes crossing the cut right after this layer (communication)
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
  double microbatch = 1;  // the micro-batch size the layer costs were measured at
  std::vector<LayerProfile> layers;
  std::vector<LayerTie> ties;  // from `loom profile` of loom's models; graph.txt profiles have none

  int size() const { return static_cast<int>(layers.size()); }
  // The costs of `layer` at micro-batch size `microbatch` (see the scaling rule above).
  LayerCost cost_at(int layer, double microbatch) const;
  double parameter_bytes(int first, int last) const;  // sum over layers first..last
  double total_parameter_bytes() const;
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
