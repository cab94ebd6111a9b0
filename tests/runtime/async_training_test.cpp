// Asynchronous schedules (PipeDream weight stashing, PipeDream-2BW) against a one-process reference
// that runs every minibatch on each stage's weight version named by the schedule and applies its
// gradient to the newest weights. Equal losses and final weights mean each backward ran with
// exactly the weights its forward used (stashing) and updates landed on the right version.
#include <catch2/catch.hpp>

#include <loom/comm/range_split.h>
#include <loom/comm/mpi_session.h>
#include <loom/schedule/generators.h>

#include "sequential_reference.h"

using namespace loom;

namespace {

// version[s][n]: the weight version stage s uses for minibatch n, read off the schedule.
std::vector<std::vector<int>> versions(const schedule::Schedule& sched, int microbatches_per_minibatch,
                                       std::int64_t minibatches) {
  std::vector<std::vector<int>> version(static_cast<std::size_t>(sched.stages),
                                        std::vector<int>(static_cast<std::size_t>(minibatches), -1));
  for (int s = 0; s < sched.stages; ++s)
    for (const schedule::Action& a : sched.programs[s])
      if (a.op == schedule::Op::Forward) {
        int& v = version[s][a.microbatch / microbatches_per_minibatch];
        REQUIRE((v < 0 || v == a.version));  // every micro-batch of a minibatch uses one version
        v = a.version;
      }
  return version;
}

void check_async(const std::string& kind, int stages, int replicas) {
  runtime::TrainerConfig o;
  o.model = "mlp";
  o.overrides = "input=16,hidden=24,layers=4,classes=4";
  o.data = "synthetic";
  o.global_batch = 16;
  o.microbatches = kind == "pipedream" ? 1 : 4;
  o.steps = 6;
  o.seed = 9;
  o.threads = 1;
  o.lr = 0.2;
  o.momentum = 0.9;
  o.lr_schedule = "constant";  // the reference steps with a constant rate
  o.stages = stages;
  o.replicas = replicas;
  o.schedule = kind;
  o.bucket_mb = 0.001;
  schedule::ScheduleOptions so;
  so.kind = kind;
  so.stages = stages;
  so.microbatches = kind == "pipedream" ? static_cast<int>(o.steps) : o.microbatches;
  so.minibatches = static_cast<int>(o.steps);
  const auto version = versions(schedule::make_schedule(so), kind == "pipedream" ? 1 : o.microbatches, o.steps);
  std::vector<int> stage_of_block;
  for (int s = 0; s < stages; ++s) {
    const comm::Range blocks = comm::even_split(4, stages, s);
    for (std::int64_t b = blocks.begin; b < blocks.end; ++b) stage_of_block.push_back(s);
  }
  // The schedule must really use stale versions, or this test would prove nothing.
  bool stale = false;
  for (std::size_t n = 0; n < version[0].size(); ++n) stale |= version[0][n] < static_cast<int>(n);
  REQUIRE(stale);
  const test::SequentialRun reference = test::train_with_versions(o, version, stage_of_block);
  std::map<std::string, std::vector<double>> trained;
  const runtime::TrainSummary summary = test::train(o, [&](const test::TrainedStage& stage) {
    for (Chain* chunk : stage.chunks)
      for (const NamedParameter& p : chunk->parameters()) trained[p.name] = p.parameter->value.to_double_vector();
  });
  INFO(kind << " S=" << stages << " R=" << replicas);
  REQUIRE(summary.losses.size() == reference.losses.size());
  for (std::size_t n = 0; n < reference.losses.size(); ++n)
    CHECK(std::abs(summary.losses[n] - reference.losses[n]) <= 1e-5 * std::abs(reference.losses[n]));
  for (const auto& [name, values] : trained) {
    INFO("parameter " << name);
    CHECK(test::norm_relative_error(values, reference.parameters.at(name)) <= 1e-5);
  }
}

}  // namespace

TEST_CASE("PipeDream and 2BW train exactly as their weight-version semantics say", "[train][async][mpi]") {
  comm::ensure_mpi();
  const int world = comm::world_size();
  for (const std::string kind : {"pipedream", "pipedream-2bw"}) {
    if (world == 2) check_async(kind, 2, 1);
    if (world == 4) {
      check_async(kind, 4, 1);
      check_async(kind, 2, 2);
    }
  }
}
