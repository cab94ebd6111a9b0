#include <loom/comm/allreduce_cost.h>

#include <loom/base/error.h>

namespace loom::comm {

namespace {

double transfer_seconds(double bytes, double gbps) { return bytes > 0 ? bytes / (gbps * 1e9) : 0.0; }

}  // namespace

AllreduceTraffic ring_traffic(double bytes, int nodes, int ranks_per_node, double intra_gbps, double inter_gbps) {
  LOOM_CHECK(nodes > 0 && ranks_per_node > 0 && intra_gbps > 0 && inter_gbps > 0, "ring_traffic: bad arguments");
  const double n = static_cast<double>(nodes) * ranks_per_node;
  const double per_rank = 2 * bytes * (n - 1) / n;
  AllreduceTraffic traffic;
  // The busiest rank: one that sends across a node boundary when there are several nodes.
  if (nodes > 1)
    traffic.inter_bytes = per_rank;
  else
    traffic.intra_bytes = per_rank;
  traffic.seconds = transfer_seconds(per_rank, nodes > 1 ? inter_gbps : intra_gbps);
  return traffic;
}

AllreduceTraffic hierarchical_traffic(double bytes, int nodes, int ranks_per_node, double intra_gbps, double inter_gbps) {
  LOOM_CHECK(nodes > 0 && ranks_per_node > 0 && intra_gbps > 0 && inter_gbps > 0, "hierarchical_traffic: bad arguments");
  const double g = ranks_per_node, N = nodes;
  AllreduceTraffic traffic;
  traffic.intra_bytes = 2 * bytes * (g - 1) / g;
  traffic.inter_bytes = 2 * bytes * (N - 1) / (N * g);
  traffic.seconds = transfer_seconds(traffic.intra_bytes, intra_gbps) + transfer_seconds(traffic.inter_bytes, inter_gbps);
  return traffic;
}

}  // namespace loom::comm
