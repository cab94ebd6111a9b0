// The central correctness test: K steps of pipelined training, for every synchronous schedule and
// every (stages, replicas) that fits this world, and with activation recomputation, give the same per-step losses and final weights as
// the whole model trained sequentially on one rank (relative error <= 1e-5). Dropout is on (gpt).
#include <catch2/catch.hpp>

#include <mpi.h>

#include <loom/comm/runtime.h>

#include "sequential_reference.h"

using namespace loom;

namespace {

runtime::TrainerConfig small_model(const std::string& model) {
  runtime::TrainerConfig o;
  o.model = model;
  o.overrides = model == "mlp" ? "input=16,hidden=24,layers=8,classes=4" : "seq=8,dim=16,heads=2,layers=6,dropout=10";
  o.data = "synthetic";
  o.global_batch = 16;
  o.microbatches = 4;
  o.steps = 3;
  o.seed = 5;
  o.threads = 1;
  // SGD, not Adam: the key bias of attention has an exactly-zero true gradient, so its computed
  // gradient is rounding noise, which Adam's normalisation would blow up to full-size updates.
  o.optimizer = "sgd";
  o.lr = model == "mlp" ? 0.1 : 0.05;
  o.momentum = 0.9;
  o.lr_schedule = "constant";  // the reference steps with a constant rate
  o.bucket_mb = 0.001;  // several buckets even for these small models
  return o;
}

}  // namespace

TEST_CASE("pipelined training equals sequential training", "[train][mpi]") {
  comm::ensure_mpi();
  const int world = comm::world_size();
  std::vector<std::pair<int, int>> layouts;
  for (auto [s, r] : std::vector<std::pair<int, int>>{{2, 1}, {4, 1}, {2, 2}, {4, 2}})
    if (s * r == world) layouts.emplace_back(s, r);
  REQUIRE(!layouts.empty());
  for (const std::string model : {"mlp", "gpt"}) {
    const runtime::TrainerConfig base = small_model(model);
    const test::SequentialRun reference = test::train_sequentially(base);
    for (const auto& [stages, replicas] : layouts)
      for (const auto& [schedule, recompute] : std::vector<std::pair<std::string, bool>>{
               {"gpipe", false}, {"dapple", false}, {"interleaved", false}, {"zb-h1", false}, {"dapple", true}}) {
        runtime::TrainerConfig o = base;
        o.stages = stages;
        o.replicas = replicas;
        o.recompute = recompute;
        o.schedule = schedule;
        o.allreduce = replicas > 1 && stages == 2 ? "ring" : "hierarchical";
        // One rank per pretend node: replica groups span "nodes", so the inter-node step runs.
        o.ranks_per_node = std::to_string(1);  // (a literal here trips GCC 12's bogus -Wrestrict)
        std::map<std::string, std::vector<double>> trained;
        const runtime::TrainSummary summary = test::train(o, [&](const test::TrainedStage& stage) {
          for (Chain* chunk : stage.chunks)
            for (const NamedParameter& p : chunk->parameters()) trained[p.name] = p.parameter->value.to_double_vector();
        });
        INFO(model << " " << schedule << (recompute ? " +recompute" : "") << " S=" << stages << " R=" << replicas);
        REQUIRE(summary.losses.size() == reference.losses.size());
        for (std::size_t k = 0; k < reference.losses.size(); ++k)
          CHECK(std::abs(summary.losses[k] - reference.losses[k]) <= 1e-5 * std::abs(reference.losses[k]));
        REQUIRE(!trained.empty());
        for (const auto& [name, values] : trained) {
          INFO("parameter " << name);
          REQUIRE(reference.parameters.count(name) == 1);
          CHECK(test::norm_relative_error(values, reference.parameters.at(name)) <= 1e-5);
        }
      }
  }
}
