// The machine a plan runs on: nodes (servers) × devices per node, the bandwidth of the links
// inside a node (NVLink, per device) and between nodes (one NIC per node, shared by its devices),
// and the memory of one device.
//
// A cluster is given as a preset letter, a short spec or a JSON file:
//   A                                   2 × 8 V100, NVLink 130 GB/s inside, 25 Gb/s Ethernet between
//   B                                   16 × 1 V100 on 25 Gb/s Ethernet
//   C                                   16 × 1 V100 on 10 Gb/s Ethernet
//   2x8:intra=130GB/s,inter=25Gb/s,mem=16GB      (keys optional; also intra_lat=, inter_lat=)
//   A:mem=32GB                          a preset with overrides
//   cluster.json                        {"nodes": 2, "devices_per_node": 8, "intra_bandwidth":
//                                        "130GB/s", "inter_bandwidth": "25Gb/s",
//                                        "device_memory": "16GB"} (numbers are bytes, bytes/s)
// Units: B = bytes, b = bits; K, M, G, T are powers of 1000, Ki, Mi, Gi, Ti of 1024.
#pragma once

#include <string>

namespace loom::planner {

struct Cluster {
  std::string name;  // the spec it came from, for tables
  int nodes = 1;
  int devices_per_node = 1;
  double intra_bandwidth = 130e9;  // bytes/s between two devices of one node
  double inter_bandwidth = 25e9 / 8;  // bytes/s in and out of one node
  double intra_latency_ms = 0;
  double inter_latency_ms = 0;
  double device_memory = 16e9;  // bytes

  int devices() const { return nodes * devices_per_node; }
  int node_of(int device) const { return device / devices_per_node; }
};

// The sizes and quantities a cluster may have (every reader checks them, naming the field): the
// planners' searches and the plans they write are sized by them.
constexpr int kMaxNodes = 4096;
constexpr int kMaxDevicesPerNode = 1024;
constexpr int kMaxClusterDevices = 16384;
constexpr double kMaxBandwidth = 1e15;  // bytes/s (1 PB/s)
constexpr double kMaxDeviceMemory = 1e15;  // bytes
constexpr double kMaxLatencyMs = 1e6;  // 1000 s

// Throws loom::Error, prefixed by `source`, when a size or quantity lies outside those ranges.
void validate(const Cluster& cluster, const std::string& source);

Cluster cluster_preset(const std::string& letter);  // "A", "B" or "C"
// A preset, a spec, or the path of a JSON file (anything that names an existing file).
Cluster parse_cluster(const std::string& spec_or_path);
Cluster parse_cluster_spec(const std::string& spec);
Cluster read_cluster_json(const std::string& path);
// "2x8, intra 130 GB/s, inter 3.1 GB/s, 16 GB/device"
std::string describe(const Cluster& cluster);

// "130GB/s" → 1.3e11 bytes/s; "16GiB" → bytes; "5us" → 0.005 ms. Throw loom::Error on bad input.
double parse_bandwidth(const std::string& text);
double parse_bytes(const std::string& text);
double parse_latency_ms(const std::string& text);

}  // namespace loom::planner
