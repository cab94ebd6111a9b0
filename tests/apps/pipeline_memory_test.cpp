// Activation memory of pipelined training (issue 5, "Memory"): the peak of
// MemoryCategory::activations that each stage's rank measures while training under GPipe and
// DAPPLE matches the simulator's prediction within 10%, where the prediction comes from one
// micro-batch's activations measured on their own (apps::measure_stage_activations: what a stage's
// forward keeps until backward, and what it holds only while it runs). DAPPLE's peak stays near
// K_s/M of GPipe's: below (K_s + 1)/M of it, and within 10% of the simulated ratio.
//
// One more thing is held only for a while: on the CPU a send keeps the very tensor it sends alive
// until the link sees the transfer complete, which it checks at its next send. Under 1F1B the
// output of micro-batch j is thus still alive during the forward that follows B_j, so a stage that
// sends activations holds one more output at its peak; the prediction counts it in the transient
// (an upper bound: under GPipe the outputs the stage keeps anyway add nothing).
#include <catch2/catch.hpp>

#include <loom/comm/range_split.h>
#include <loom/comm/mpi_session.h>
#include <loom/models/model.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/simulator.h>

#include "profiler.h"
#include "training.h"

using namespace loom;

TEST_CASE("peak activation memory per stage matches the simulator under gpipe and dapple", "[train][memory][mpi]") {
  comm::ensure_mpi();
  const int stages = comm::world_size();  // one replica per stage: rank = stage
  const int stage = comm::world_rank();
  REQUIRE(stages >= 2);

  apps::TrainOptions o;
  o.model = "mlp";
  o.overrides = "input=48,hidden=64,layers=16,classes=10";  // 4+ blocks per stage: one output is < 10% of a peak
  o.data = "synthetic";
  o.stages = stages;
  o.microbatches = 8;
  o.global_batch = 64;
  o.steps = 2;
  o.threads = 1;
  o.quiet = true;
  o.optimizer = "sgd";

  const ModelSpec spec = make_model(o.model, o.overrides);
  const std::int64_t rows = o.global_batch / o.microbatches;
  schedule::CostModel costs;
  for (int s = 0; s < stages; ++s) {
    const comm::Range blocks = comm::even_split(spec.blocks(), stages, s);
    const apps::StageActivations one = apps::measure_stage_activations(spec, blocks.begin, blocks.end, rows, o.seed);
    REQUIRE(one.kept_bytes > 0);
    schedule::StageCost cost;
    cost.forward_ms = 1;
    cost.backward_ms = 2;
    cost.activation_bytes = static_cast<double>(one.kept_bytes);
    cost.forward_transient_bytes = static_cast<double>(one.transient_bytes + one.output_bytes);
    costs.stages.push_back(cost);
  }

  std::map<std::string, double> measured, predicted;
  for (const std::string kind : {"gpipe", "dapple"}) {
    const schedule::SimulationResult sim =
        schedule::simulate(schedule::make_schedule({kind, stages, o.microbatches, 2, 3, {}}), costs);
    apps::TrainOptions run = o;
    run.schedule = kind;
    measured[kind] = static_cast<double>(apps::train(run).peak_activation_bytes);
    predicted[kind] = sim.stages.at(stage).peak_activation_bytes;
    INFO(kind << " S=" << stages << " M=" << o.microbatches << " stage " << stage << ": kept "
              << costs.stages[stage].activation_bytes << " B + transient "
              << costs.stages[stage].forward_transient_bytes << " B per micro-batch, peak in-flight "
              << sim.stages.at(stage).peak_inflight << "; measured peak " << measured[kind] << " B, predicted "
              << predicted[kind] << " B");
    CHECK(std::abs(measured[kind] - predicted[kind]) <= 0.10 * predicted[kind]);
  }

  const int warmup = std::min(stages - stage, o.microbatches);  // DAPPLE's K_s
  const double ratio = measured["dapple"] / measured["gpipe"];
  INFO("stage " << stage << ": DAPPLE/GPipe peak " << ratio << ", K_s/M = " << warmup << "/" << o.microbatches
                << ", simulated " << predicted["dapple"] / predicted["gpipe"]);
  CHECK(ratio < static_cast<double>(warmup + 1) / o.microbatches);
  CHECK(ratio == Approx(predicted["dapple"] / predicted["gpipe"]).epsilon(0.10));
}
