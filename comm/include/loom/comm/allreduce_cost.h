// The link model of an allreduce: bytes each rank sends over intra- and inter-node links, and the
// time that takes at given bandwidths (latency ignored; bandwidth-bound sizes).
//
// For S bytes over N nodes of G ranks (n = N*G):
//   flat ring       every rank sends 2S(n-1)/n; each of the 2(n-1) steps moves S/n over every ring
//                   edge at once, and N of the edges cross nodes, so a step lasts (S/n)/B_inter
//                   when N > 1:   T = 2S(n-1)/(n B_inter)
//   hierarchical    intra 2S(G-1)/G per rank at B_intra, inter 2S(N-1)/(N G) per rank at B_inter:
//                   T = 2S(G-1)/(G B_intra) + 2S(N-1)/(N G B_inter)
#pragma once

namespace loom::comm {

struct AllreduceTraffic {
  double intra_bytes = 0;  // per rank, over intra-node links
  double inter_bytes = 0;  // per rank, over inter-node links
  double seconds = 0;      // at the given bandwidths
};

AllreduceTraffic ring_traffic(double bytes, int nodes, int ranks_per_node, double intra_gbps, double inter_gbps);
AllreduceTraffic hierarchical_traffic(double bytes, int nodes, int ranks_per_node, double intra_gbps, double inter_gbps);

}  // namespace loom::comm
