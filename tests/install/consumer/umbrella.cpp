// loom::loom links every module; one header of each must compile and link from outside.
#include <cstdio>

#include <loom/comm/topology.h>
#include <loom/core/tensor.h>
#include <loom/layers/linear.h>
#include <loom/models/model.h>
#include <loom/planner/cluster.h>
#include <loom/runtime/stage_runner.h>
#include <loom/schedule/generators.h>

int main() {
  const loom::comm::Topology topology(2);
  const auto cluster = loom::planner::parse_cluster_spec("2x8");
  const auto spec = loom::make_model("mlp");
  std::printf("consumer_umbrella: %s; %s; %lld blocks\n", topology.describe().c_str(),
              loom::planner::describe(cluster).c_str(), static_cast<long long>(spec.blocks()));
  return topology.nodes() == 1 && spec.blocks() >= 2 ? 0 : 1;
}
