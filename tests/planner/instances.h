// Small hand-made and random profiles and clusters for the planner tests.
#pragma once

#include <random>
#include <vector>

#include <loom/planner/cluster.h>
#include <loom/planner/profile.h>

namespace loom::planner::test {

struct LayerSpec {
  double forward_ms, backward_ms, activation_bytes, boundary_bytes, parameter_bytes;
};

// Costs are per sample (profiled micro-batch 1) unless `microbatch` says otherwise.
inline Profile make_profile(const std::vector<LayerSpec>& layers, double microbatch = 1) {
  Profile p;
  p.model = "test";
  p.source = "test";
  p.microbatch = microbatch;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    std::string name = "l";
    name += std::to_string(i);
    p.layers.push_back({name, {l.forward_ms, l.backward_ms, l.activation_bytes, l.boundary_bytes},
                        l.parameter_bytes, {}});
  }
  return p;
}

inline Cluster make_cluster(int nodes, int per_node, double intra, double inter, double memory) {
  Cluster c;
  c.name = "test";
  c.nodes = nodes;
  c.devices_per_node = per_node;
  c.intra_bandwidth = intra;
  c.inter_bandwidth = inter;
  c.device_memory = memory;
  return c;
}

// A random chain whose compute, activations and parameters vary over an order of magnitude, so
// that pivots, communication and allreduce all matter somewhere.
inline Profile random_profile(std::mt19937& rng, int layers) {
  std::uniform_real_distribution<double> time(0.2, 3.0), bytes(1e5, 3e6), params(0, 1e7);
  std::vector<LayerSpec> specs;
  for (int l = 0; l < layers; ++l) {
    const double act = bytes(rng);
    specs.push_back({time(rng), 2 * time(rng), act, act * std::uniform_real_distribution<double>(0.3, 1.5)(rng),
                     rng() % 4 == 0 ? 0.0 : params(rng)});
  }
  return make_profile(specs, 2);
}

}  // namespace loom::planner::test
