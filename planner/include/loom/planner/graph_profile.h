// Reader for the PipeDream/DAPPLE `graph.txt` profiles (the published V100 profiles).
//
// Format: node lines `nodeN -- description -- forward_compute_time=F, backward_compute_time=B,
// activation_size=A, parameter_size=P` (ms and bytes; A may be a list `[a; b]`, which is summed),
// and edge lines `nodeA -- nodeB` indented by tabs or spaces. Node lines need not be in order.
//
// Collapsing a graph to a chain (docs/planner.md, "graph.txt"): nodes are put in a topological
// order (Kahn's algorithm, always taking the ready node with the smallest number), and each node
// becomes one layer of the chain. The cut after position i is crossed by every tensor produced at
// or before i and consumed after i, so the layer's boundary bytes are the summed activation sizes
// of those producers, each counted once however many later consumers it has. For a plain chain
// this is just the node's own activation size.
#pragma once

#include <istream>
#include <string>

#include <loom/planner/profile.h>

namespace loom::planner {

// The profiled micro-batch size: `microbatch` when positive, else the N of a `-pbs-N` in the file
// name, else 1. The model name is the file name without extension and without `-pbs-N`.
Profile read_graph_profile(const std::string& path, double microbatch = 0);
Profile parse_graph_profile(std::istream& in, const std::string& source, double microbatch = 0);

}  // namespace loom::planner
