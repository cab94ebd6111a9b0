// Traffic shaping for experiments: make links look slower than they are.
//
// One machine cannot show what a slow inter-node network does to an allreduce. With shaping on,
// every point-to-point transfer that loom itself makes (ring steps of the ring and hierarchical
// allreduce, stage-boundary messages) first waits as if its bytes crossed a link of the given
// bandwidth: each rank owns one outgoing intra-node link and one outgoing inter-node link, and a
// transfer occupies its link for bytes / bandwidth. MPI's own collectives are not shaped.
#pragma once

#include <cstdint>
#include <optional>

#include <loom/comm/topology.h>

namespace loom::comm {

struct LinkShaping {
  double intra_gbps = 0;  // GB/s (1e9 bytes/s) between ranks on one node; 0 = not shaped
  double inter_gbps = 0;  // GB/s between ranks on different nodes; 0 = not shaped
};

void enable_link_shaping(const Topology& topology, const LinkShaping& shaping);
void disable_link_shaping();
std::optional<LinkShaping> link_shaping();

// Blocks until `bytes` sent to world rank `peer` would have left this rank's link.
// Free when shaping is off.
void shape_send(int peer, std::int64_t bytes);

}  // namespace loom::comm
