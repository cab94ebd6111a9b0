// `loom profile`'s measurements (apps/profiler.h): the profile of a small mlp round-trips through
// the planner's JSON reader with one entry per block, positive times, the exact parameter and
// output bytes of Chain::describe_blocks, and activation bytes, working sets and split holds worked
// out by hand; a stage's blocks add up to what the stage keeps when measured as a whole.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <numeric>

#include <unistd.h>

#include <loom/comm/range_split.h>
#include <loom/core/device.h>
#include <loom/core/memory.h>
#include <loom/planner/profile_json.h>

#include "profiler.h"

using namespace loom;

namespace {

apps::ProfileOptions small_mlp() {
  apps::ProfileOptions o;
  o.model = "mlp";
  o.overrides = "input=20,hidden=24,layers=5,classes=6";
  o.microbatch = 8;
  o.threads = 1;
  o.repeats = 3;
  o.warmup = 1;
  return o;
}

}  // namespace

TEST_CASE("the profile of a small mlp loads back with one entry per block and exact bytes", "[profile]") {
  const apps::ProfileOptions o = small_mlp();
  const planner::Profile measured = apps::profile_model(o);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("loom_profiler_test_" + std::to_string(::getpid()) + ".json")).string();
  planner::write_profile_json(measured, path);
  const planner::Profile profile = planner::read_profile_json(path);
  std::remove(path.c_str());

  const ModelSpec spec = make_model(o.model, o.overrides);
  const auto chain = spec.build_all();
  const std::vector<BlockInfo> blocks = chain->describe_blocks({Shape{o.microbatch, 20}});
  REQUIRE(profile.model == "mlp");
  REQUIRE(profile.microbatch == 8);
  REQUIRE(profile.size() == spec.blocks());
  REQUIRE(blocks.size() == static_cast<std::size_t>(spec.blocks()));
  for (int i = 0; i < profile.size(); ++i) {
    const planner::LayerProfile& layer = profile.layers[i];
    INFO("block " << i << " " << layer.name);
    CHECK(layer.name == spec.block_names[i]);
    CHECK(layer.cost.forward_ms > 0);
    CHECK(layer.cost.backward_ms > 0);
    CHECK(layer.parameter_bytes == static_cast<double>(blocks[i].parameter_bytes));
    CHECK(layer.parameter_bytes == static_cast<double>(chain->block(i).parameter_bytes()));
    CHECK(layer.cost.boundary_bytes == static_cast<double>(blocks[i].output_bytes));
  }
  // By hand (f32): a hidden block (Linear + ReLU) keeps its input, which the block before made
  // (or the data), and its ReLU output; it is charged the ReLU output. The classifier keeps its
  // input (charged before); the loss keeps its log-probabilities and the loss value, and the
  // targets it keeps come from the data.
  const double rows = 8, hidden = 24, classes = 6;
  CHECK(profile.layers[0].parameter_bytes == (20 * hidden + hidden) * 4);
  for (int i = 0; i + 1 < profile.size(); ++i) CHECK(profile.layers[i].cost.activation_bytes == rows * hidden * 4);
  CHECK(profile.layers.back().cost.activation_bytes == rows * classes * 4 + 4);
  // The next block's Linear keeps a hidden block's ReLU output too: recomputing the block alone saves none of it.
  for (int i = 0; i + 1 < profile.size(); ++i) CHECK(profile.layers[i].cost.next_kept_bytes == rows * hidden * 4);
  CHECK(profile.layers.back().cost.next_kept_bytes == 0);
  // Version 2, by hand: a hidden block's forward briefly holds its Linear's output (which the ReLU
  // replaces); its B holds its input gradient; its BI makes that too and keeps the gradient at the
  // Linear's output, which its BW needs (the split hold); its BW adds to the gradients it already has.
  const double activation = rows * hidden * 4;
  for (int i = 1; i + 1 < profile.size(); ++i) {
    const planner::LayerCost& c = profile.layers[i].cost;
    INFO("block " << i);
    CHECK(c.forward_workspace_bytes == activation);
    CHECK(c.backward_workspace_bytes == activation);
    CHECK(c.input_workspace_bytes == 2 * activation);
    CHECK(c.split_held_bytes == activation);
    CHECK(c.weight_workspace_bytes == 0);
    CHECK(c.backward_input_ms > 0);
    CHECK(c.backward_weight_ms > 0);
  }
  CHECK(profile.input_bytes == rows * 20 * 4);  // f32 features
  CHECK(profile.target_bytes == rows * 8);      // int64 class indices
  CHECK(profile.data_ms >= 0);
  CHECK(profile.step_ms_per_mb_of("sgd") > 0);
  CHECK(profile.step_ms_per_mb_of("adam") > 0);
}

TEST_CASE("a stage's profiled blocks add up to the activations the stage keeps", "[profile]") {
  const apps::ProfileOptions o = small_mlp();
  const planner::Profile profile = apps::profile_model(o);
  const ModelSpec spec = make_model(o.model, o.overrides);
  for (int stages = 1; stages <= 3; ++stages)
    for (int s = 0; s < stages; ++s) {
      const comm::Range blocks = comm::even_split(spec.blocks(), stages, s);
      double sum = 0;
      for (std::int64_t i = blocks.begin; i < blocks.end; ++i) sum += profile.layers[i].cost.activation_bytes;
      const apps::StageActivations stage = apps::measure_stage_activations(spec, blocks.begin, blocks.end, o.microbatch, o.seed);
      INFO("blocks [" << blocks.begin << ", " << blocks.end << ")");
      CHECK(static_cast<double>(stage.kept_bytes) == sum);
      CHECK(stage.transient_bytes >= 0);
    }
}

TEST_CASE("a profile on the sim device measures the same bytes, from the device's ledger", "[profile][sim]") {
  apps::ProfileOptions o = small_mlp();
  const planner::Profile host = apps::profile_model(o);
  reset_peak_memory();
  reset_peak_memory(Device::sim());
  o.device = "sim";
  const planner::Profile device = apps::profile_model(o);
  CHECK(device.device.rfind("sim:0 (cpu kernels, ", 0) == 0);
  REQUIRE(device.size() == host.size());
  for (int i = 0; i < host.size(); ++i) {
    INFO("block " << i);
    CHECK(device.layers[i].cost.activation_bytes == host.layers[i].cost.activation_bytes);
    CHECK(device.layers[i].cost.boundary_bytes == host.layers[i].cost.boundary_bytes);
    CHECK(device.layers[i].parameter_bytes == host.layers[i].parameter_bytes);
    CHECK(device.layers[i].cost.forward_ms > 0);
  }
  // The activations lived on the device (the blocks are built on the host, then moved, as in training).
  CHECK(memory_stats(Device::sim()).peak(MemoryCategory::activations) > 0);
  CHECK(memory_stats(Device::sim()).peak(MemoryCategory::parameters) > 0);
  CHECK(memory_stats(Device::cpu()).peak(MemoryCategory::activations) == 0);
  o.device = "tpu";
  CHECK_THROWS_WITH(apps::profile_model(o), Catch::Contains("--device 'tpu': expected cpu, cuda"));
  if (cuda_device_count() == 0) {
    o.device = "cuda";
    CHECK_THROWS_WITH(apps::profile_model(o), Catch::Contains("--device cuda: "));
  }
}

TEST_CASE("profile options are checked", "[profile]") {
  apps::ProfileOptions o = small_mlp();
  o.repeats = 0;
  CHECK_THROWS_WITH(apps::profile_model(o), Catch::Contains("--repeats"));
  o = small_mlp();
  o.microbatch = 0;
  CHECK_THROWS_WITH(apps::profile_model(o), Catch::Contains("--microbatch"));
  o = small_mlp();
  o.model = "resnet-9000";
  CHECK_THROWS_WITH(apps::profile_model(o), Catch::Contains("unknown model"));
}
