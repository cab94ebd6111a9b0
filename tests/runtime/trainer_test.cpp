// The Trainer used as a library, the way research code drives pipelined training from its own
// main(), under mpiexec -n 2: a model of the test's own (a ModelSpec built here from loom::layers,
// not a preset) trained 2 stages x 1 replica for 3 steps through the hooks; the losses and final
// weights equal a one-rank run with plain layer calls, the hooks see every step in order, and the step counter
// ends at 3. A second Trainer resumes from the first one's checkpoint and continues the curve;
// under a decaying learning rate a resume must keep the run's length.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include <loom/comm/mpi_session.h>
#include <loom/layers/activation.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/sequential.h>
#include <loom/runtime/trainer.h>

#include "compare_runs.h"
#include "sequential.h"

using namespace loom;

namespace {
// A user's model: 4 blocks (Linear+Tanh, Linear+Tanh, Linear+Tanh, Linear) over 10 features, 4 classes.
ModelSpec user_model() {
  ModelSpec spec;
  spec.name = "user-tanh-mlp";
  spec.data.sample_shape = Shape({10});
  spec.data.target_shape = Shape({});
  spec.data.classes = 4;
  const std::vector<std::pair<std::int64_t, std::int64_t>> widths = {{10, 20}, {20, 20}, {20, 20}, {20, 4}};
  for (std::size_t b = 0; b < widths.size(); ++b) {
    spec.block_names.push_back("layer" + std::to_string(b));
    const bool last = b + 1 == widths.size();
    spec.block_factories.push_back([in = widths[b].first, out = widths[b].second, last]() -> LayerPtr {
      auto block = std::make_unique<Sequential>();
      block->add(std::make_unique<Linear>(in, out));
      if (!last) block->add(std::make_unique<Tanh>());
      return block;
    });
  }
  spec.make_loss = [] { return std::make_unique<CrossEntropyLoss>(); };
  return spec;
}

runtime::TrainerConfig config_for_test() {
  runtime::TrainerConfig c;
  c.stages = 2;
  c.microbatches = 4;
  c.global_batch = 16;
  c.steps = 3;
  c.optimizer = "sgd";
  c.momentum = 0.0;
  c.lr = 0.2;
  c.lr_schedule = "constant";
  c.seed = 5;
  c.threads = 1;
  return c;
}
}  // namespace

TEST_CASE("Trainer: a user's model trains pipelined like one rank", "[runtime][trainer][mpi]") {
  REQUIRE(comm::world_size() == 2);
  const ModelSpec spec = user_model();
  const test::SequentialRun reference = test::run_sequentially(spec, 5, 16, 4, 3, 0.2);
  const std::string dir = (std::filesystem::path(LOOM_BINARY_DIR) / "tests" / "runtime" / "trainer_ckpt").string();

  runtime::TrainerConfig config = config_for_test();
  config.checkpoint = dir;
  runtime::Trainer trainer(config, spec);
  CHECK(trainer.layout().stages() == 2);
  CHECK(trainer.chunks().size() == 1);
  CHECK(trainer.chunks()[0]->first_block_index() == 2 * comm::world_rank());
  std::vector<std::int64_t> steps;
  std::vector<double> losses;
  std::vector<std::int64_t> checkpoints;
  runtime::TrainerHooks hooks;
  hooks.on_step = [&](const runtime::StepReport& r) {
    steps.push_back(r.step);
    losses.push_back(r.loss);
    CHECK(r.lr == Approx(0.2));
  };
  hooks.on_checkpoint = [&](const runtime::CheckpointReport& r) { checkpoints.push_back(r.step); };
  const runtime::TrainSummary summary = trainer.run(hooks);
  CHECK(steps == std::vector<std::int64_t>{1, 2, 3});
  CHECK(trainer.step() == 3);
  CHECK(checkpoints == std::vector<std::int64_t>{3});
  REQUIRE(losses.size() == 3);
  test::check_losses(losses, reference.losses, 1e-5);
  CHECK(summary.losses == losses);
  test::Weights trained;
  for (Chain* chunk : trainer.chunks())
    for (const NamedParameter& p : chunk->parameters()) trained[p.name] = p.parameter->value.to_double_vector();
  test::check_final_weights(trained, reference.parameters, 1e-5);

  // Resume: 3 more steps from the checkpoint continue the one-rank curve.
  const test::SequentialRun longer = test::run_sequentially(spec, 5, 16, 4, 6, 0.2);
  runtime::TrainerConfig more = config_for_test();
  more.steps = 6;
  more.resume = dir;
  runtime::Trainer resumed(more, spec);
  CHECK(resumed.first_step() == 3);
  const runtime::TrainSummary rest = resumed.run();
  REQUIRE(rest.losses.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(rest.losses[i] == Approx(longer.losses[i + 3]).epsilon(1e-5));
  CHECK(resumed.step() == 6);
}

TEST_CASE("Trainer: a resumed run goes on, stretching its schedule or starting another", "[runtime][trainer][mpi]") {
  const std::string dir = (std::filesystem::path(LOOM_BINARY_DIR) / "tests" / "runtime" / "trainer_cosine_ckpt").string();
  runtime::TrainerConfig config = config_for_test();
  config.lr_schedule = "cosine";
  config.steps = 2;
  config.checkpoint = dir;
  runtime::Trainer(config, user_model()).run();
  runtime::TrainerConfig longer = config_for_test();
  longer.lr_schedule = "cosine";
  longer.steps = 4;
  longer.resume = dir;
  // The same schedule, more steps: the cosine from step 0 stretched over 4 steps, as a 4-step run's.
  runtime::Trainer stretched(longer, user_model());
  CHECK(stretched.first_step() == 2);
  CHECK(stretched.lr_schedule().first_step == 0);
  std::vector<double> rates;
  runtime::TrainerHooks hooks;
  hooks.on_step = [&](const runtime::StepReport& r) { rates.push_back(r.lr); };
  REQUIRE(stretched.run(hooks).losses.size() == 2);
  REQUIRE(rates.size() == 2);
  CHECK(rates[0] == Approx(0.2 * 0.5 * (1 + std::cos(3.14159265358979 * 2 / 4))));
  CHECK(rates[1] == Approx(0.2 * 0.5 * (1 + std::cos(3.14159265358979 * 3 / 4))));
  // Another schedule (and rate) starts at the checkpoint's step.
  longer.lr_schedule = "linear";
  longer.lr = 0.1;
  rates.clear();
  runtime::Trainer restarted(longer, user_model());
  CHECK(restarted.lr_schedule().first_step == 2);
  restarted.run(hooks);
  REQUIRE(rates.size() == 2);
  CHECK(rates[0] == Approx(0.1));
  CHECK(rates[1] == Approx(0.05));
  // What changes the numerics silently is refused, naming the flag.
  longer.optimizer = "adam";
  CHECK_THROWS_WITH(runtime::Trainer(longer, user_model()),
                    Catch::Contains("manifest.json") && Catch::Contains("--optimizer sgd, this run has --optimizer adam"));
  longer.optimizer = "sgd";
  longer.steps = 2;  // the same length: the checkpoint is at its end, refused for that reason only
  CHECK_THROWS_WITH(runtime::Trainer(longer, user_model()), Catch::Contains("2 steps in all"));
}
