// fp16 training (runtime/precision.h, runtime/loss_scaler.h) under mpiexec -n 4, on the tiny gpt
// preset over 4 stages:
//   - pipelined it equals (losses and final weights), bit for bit, the one-rank fp16 run of mixed_precision_reference.h
//     (parameters, activations, gradients and GEMM operands rounded to f16; backward from the loss
//     scale, SGD dividing by it), and differs from fp32 and bf16; its parameters are f16 values;
//   - from a loss scale of 2^40 the first steps overflow: they are skipped on every rank (the
//     parameters stay as initialised) and the scale halves; over 40 steps the reported scales and
//     skips follow the scaler's rule, and the good steps update the weights;
//   - over the last 20 of 200 steps of Adam its mean loss is within 2% of fp32's (measured 2.5627
//     against 2.5531 in Release, 2.5793 against 2.5527 under ASan);
//   - a resume continues bit for bit, the loss scale and its count of good steps included, and a
//     checkpoint whose manifest lost its loss scale is refused by name.
#include <loom/comm/mpi_session.h>
#include <loom/runtime/trainer.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "compare_runs.h"
#include "mixed_precision_reference.h"
#include "run_dir.h"

using namespace loom;
using test::gpt_run;

namespace {

struct Run {
  std::vector<double> losses;
  std::vector<runtime::StepReport> reports;
};

Run train(const runtime::TrainerConfig& config, bool* f16_values = nullptr, test::Weights* weights = nullptr) {
  runtime::Trainer trainer(config);
  Run run;
  runtime::TrainerHooks hooks;
  hooks.on_step = [&](const runtime::StepReport& r) { run.reports.push_back(r); };
  run.losses = trainer.run(hooks).losses;
  if (f16_values) *f16_values = test::parameters_are(trainer, DType::f16);
  if (weights)
    for (Chain* chunk : trainer.chunks())
      for (const NamedParameter& p : chunk->parameters()) (*weights)[p.name] = p.parameter->value.to_double_vector();
  return run;
}

std::vector<std::vector<double>> parameter_values(const runtime::Trainer& trainer) {
  std::vector<std::vector<double>> values;
  for (Chain* chunk : trainer.chunks())
    for (const NamedParameter& p : trainable_parameters(*chunk)) values.push_back(p.parameter->value.to_double_vector());
  return values;
}

}  // namespace

TEST_CASE("fp16: 4 pipeline stages equal the one-rank fp16 run bit for bit", "[runtime][fp16][mpi]") {
  REQUIRE(comm::world_size() == 4);
  const runtime::TrainerConfig config = gpt_run("fp16", 4);
  const test::SequentialRun reference = test::mixed_precision_sequentially(config, config.loss_scale);
  bool f16_values = false;
  test::Weights trained;
  const Run pipelined = train(config, &f16_values, &trained);
  REQUIRE(pipelined.losses.size() == 4);
  test::check_losses(pipelined.losses, reference.losses, 0);
  test::check_final_weights(trained, reference.parameters, 0);  // after the fourth step, too
  for (const runtime::StepReport& report : pipelined.reports) {
    CHECK(report.loss_scale == 65536.0);
    CHECK_FALSE(report.skipped);
  }
  CHECK(f16_values);
  CHECK(train(gpt_run("fp32", 4)).losses != pipelined.losses);
  CHECK(train(gpt_run("bf16", 4)).losses != pipelined.losses);
}

TEST_CASE("fp16: overflowing steps are skipped everywhere and the scale follows the rule", "[runtime][fp16][mpi]") {
  runtime::TrainerConfig config = gpt_run("fp16", 2);
  config.loss_scale = std::ldexp(1.0, 40);  // the scaled loss gradient is far beyond fp16's 65504
  {
    runtime::Trainer untouched(config);
    const auto initial = parameter_values(untouched);
    runtime::Trainer skipping(config);
    std::vector<runtime::StepReport> reports;
    runtime::TrainerHooks hooks;
    hooks.on_step = [&](const runtime::StepReport& r) { reports.push_back(r); };
    skipping.run(hooks);
    REQUIRE(reports.size() == 2);
    CHECK(reports[0].skipped);
    CHECK(reports[0].loss_scale == std::ldexp(1.0, 40));
    CHECK(reports[1].skipped);
    CHECK(reports[1].loss_scale == std::ldexp(1.0, 39));
    CHECK(parameter_values(skipping) == initial);  // nothing was updated
  }
  config.steps = 40;
  config.loss_scale_window = 2;
  runtime::Trainer trainer(config);
  const auto initial = parameter_values(trainer);
  std::vector<runtime::StepReport> reports;
  runtime::TrainerHooks hooks;
  hooks.on_step = [&](const runtime::StepReport& r) { reports.push_back(r); };
  trainer.run(hooks);
  REQUIRE(reports.size() == 40);
  int skipped = 0, grown = 0, good_in_a_row = 0;
  for (std::size_t k = 0; k + 1 < reports.size(); ++k) {
    const runtime::StepReport &now = reports[k], &next = reports[k + 1];
    INFO("step " << k + 1 << ": scale " << now.loss_scale << (now.skipped ? " skipped" : ""));
    double expected = now.loss_scale;
    if (now.skipped) {
      expected /= 2;
      good_in_a_row = 0;
      ++skipped;
    } else if (++good_in_a_row == 2) {
      expected *= 2;
      good_in_a_row = 0;
      ++grown;
    }
    CHECK(next.loss_scale == expected);
  }
  INFO("skipped " << skipped << ", grown " << grown);
  CHECK(skipped >= 20);  // 2^40 down to a scale that fits, and the overflow of growths past it
  CHECK(grown >= 1);
  CHECK(40 - skipped >= 10);
  CHECK(parameter_values(trainer) != initial);  // the good steps updated the weights
}

TEST_CASE("fp16: the loss over the last 20 of 200 steps is within 2% of fp32's", "[runtime][fp16][mpi]") {
  const runtime::TrainerConfig fp32 = test::gpt_adam_run("fp32"), fp16 = test::gpt_adam_run("fp16");
  const std::vector<double> full = train(fp32).losses;
  const Run mixed = train(fp16);
  REQUIRE(mixed.losses.size() == static_cast<std::size_t>(fp16.steps));
  const double last_full = test::tail_mean(full), last_mixed = test::tail_mean(mixed.losses);
  int skipped = 0;
  for (const runtime::StepReport& r : mixed.reports) skipped += r.skipped ? 1 : 0;
  INFO("fp32: " << full.front() << " -> " << full.back() << " (last 20 steps " << last_full << "), fp16: "
                << mixed.losses.front() << " -> " << mixed.losses.back() << " (last 20 steps " << last_mixed << "), "
                << skipped << " steps skipped");
  CHECK(last_full < 0.8 * full.front());
  CHECK(std::abs(last_mixed - last_full) <= 0.02 * last_full);
  CHECK(mixed.losses != full);
}

TEST_CASE("fp16: a resume continues bit for bit, the loss scale included", "[runtime][fp16][mpi]") {
  const std::string dir = test::fresh_run_dir("fp16_ckpt");
  runtime::TrainerConfig first = gpt_run("fp16", 8);
  first.loss_scale = std::ldexp(1.0, 20);  // overflows at first, then the scale moves every step
  first.loss_scale_window = 1;
  first.checkpoint = dir;
  first.checkpoint_every = 4;
  const Run whole = train(first);
  REQUIRE(whole.losses.size() == 8);

  runtime::TrainerConfig resumed = first;
  resumed.checkpoint.clear();
  resumed.checkpoint_every = 0;
  resumed.resume = (std::filesystem::path(dir) / "step-000004").string();
  const Run rest = train(resumed);
  REQUIRE(rest.losses.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    INFO("step " << k + 5);
    CHECK(rest.losses[k] == whole.losses[k + 4]);
    CHECK(rest.reports[k].loss_scale == whole.reports[k + 4].loss_scale);
    CHECK(rest.reports[k].skipped == whole.reports[k + 4].skipped);
  }

  // A manifest without its loss scale: refused, naming the file and the field.
  const std::filesystem::path manifest = std::filesystem::path(dir) / "step-000004" / "manifest.json";
  if (comm::world_rank() == 0) {
    nlohmann::json json;
    std::ifstream(manifest) >> json;
    json.erase("loss_scale");
    std::ofstream(manifest) << json.dump();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_THROWS_WITH(runtime::Trainer(resumed),
                    Catch::Contains("manifest.json") && Catch::Contains("missing or bad field 'loss_scale'"));
}
