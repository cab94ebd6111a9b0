// `loom train --checkpoint` / `--resume`: stopping after step 3 and resuming to step 6 gives exactly
// the losses and weights of 6 steps in one go (parameters, momentum, step-keyed dropout and data
// order all carried over), for 2 stages under DAPPLE and for the interleaved schedule (two chunks
// per rank in one stage file); a checkpoint that does not fit the run is refused with a message
// naming the file. Checkpoints are step directories committed by DIR/latest: the last K are kept,
// a half-written one is never resumed, and the single-directory layout of older loom still loads.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include <mpi.h>

#include <loom/comm/mpi_session.h>

#include "checkpoint_run.h"

using namespace loom;

namespace {

runtime::TrainerConfig small_gpt(const std::string& schedule) {
  runtime::TrainerConfig o = test::small_gpt_config(7);
  o.stages = comm::world_size();
  o.schedule = schedule;
  return o;
}

using test::Weights;

runtime::TrainSummary run(const runtime::TrainerConfig& o, Weights& weights) {
  return test::train_keeping_weights(o, weights);
}

}  // namespace

TEST_CASE("stop after 3 steps, resume to 6: the same as 6 steps in one go", "[train][mpi][checkpoint]") {
  comm::ensure_mpi();
  for (const std::string schedule : {"dapple", "interleaved"}) {
    INFO("schedule " << schedule);
    const std::string dir = test::shared_scratch_dir(schedule);
    runtime::TrainerConfig straight = small_gpt(schedule);
    straight.steps = 6;
    Weights expected;
    const runtime::TrainSummary whole = run(straight, expected);

    runtime::TrainerConfig first = small_gpt(schedule);
    first.steps = 3;
    first.checkpoint = dir;
    Weights ignored;
    run(first, ignored);
    REQUIRE(std::filesystem::exists(dir + "/step-000003/manifest.json"));

    runtime::TrainerConfig second = small_gpt(schedule);
    second.steps = 6;
    second.resume = dir;
    Weights resumed;
    const runtime::TrainSummary rest = run(second, resumed);

    REQUIRE(rest.losses.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) CHECK(rest.losses[k] == Approx(whole.losses[k + 3]).epsilon(1e-12));
    REQUIRE(resumed.size() == expected.size());
    for (const auto& [name, values] : expected) {
      INFO("parameter " << name);
      REQUIRE(resumed.count(name) == 1);
      CHECK(resumed.at(name) == values);  // bit for bit
    }

    // A run that does not fit the checkpoint is refused, naming the file.
    runtime::TrainerConfig other = small_gpt(schedule);
    other.steps = 6;
    other.resume = dir;
    other.overrides = "seq=8,dim=16,heads=2,layers=8,dropout=10";
    CHECK_THROWS_WITH(test::train(other), Catch::Contains(dir + "/step-000003/manifest.json") && Catch::Contains("settings"));
    other = small_gpt(schedule);
    other.steps = 3;
    other.resume = dir;
    CHECK_THROWS_WITH(test::train(other), Catch::Contains("after step 3") && Catch::Contains("3 steps in all"));
    other.steps = 6;
    other.seed = 8;
    CHECK_THROWS_WITH(test::train(other), Catch::Contains("seed"));

    // A stage file of another run (seed 9) at the same step, copied in: refused, naming it.
    runtime::TrainerConfig stranger = small_gpt(schedule);
    stranger.steps = 3;
    stranger.seed = 9;
    stranger.checkpoint = dir + "-stranger";
    Weights unused;
    run(stranger, unused);
    const std::string stage0 = dir + "/step-000003/stage0.safetensors";
    MPI_Barrier(MPI_COMM_WORLD);
    if (comm::world_rank() == 0) {
      std::filesystem::rename(stage0, stage0 + ".mine");
      std::filesystem::copy_file(stranger.checkpoint + "/step-000003/stage0.safetensors", stage0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    other = small_gpt(schedule);
    other.steps = 6;
    other.resume = dir;
    // Every rank names it: the first failing rank's message reaches all (comm::first_failure).
    CHECK_THROWS_WITH(test::train(other), Catch::Contains(stage0) && Catch::Contains("seed 9"));
    MPI_Barrier(MPI_COMM_WORLD);
    if (comm::world_rank() == 0) {
      std::filesystem::rename(stage0 + ".mine", stage0);
      std::filesystem::remove_all(stranger.checkpoint);
    }

    // A stage file from another save than the manifest: every rank reads every stage's small JSON
    // (any layout may resume), so every rank names it.
    MPI_Barrier(MPI_COMM_WORLD);
    if (comm::world_rank() == 0) {
      std::ifstream in(dir + "/step-000003/stage0.json");
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      text.replace(text.find("\"step\": 3"), 9, "\"step\": 2");
      std::ofstream(dir + "/step-000003/stage0.json") << text;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    other = small_gpt(schedule);
    other.steps = 6;
    other.resume = dir;
    CHECK_THROWS_WITH(test::train(other), Catch::Contains(dir + "/step-000003/stage0.json") && Catch::Contains("step 2"));
    MPI_Barrier(MPI_COMM_WORLD);
    if (comm::world_rank() == 0) std::filesystem::remove_all(dir);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST_CASE("step directories: the last K kept, a half-written one ignored, the old layout read", "[train][mpi][checkpoint]") {
  namespace fs = std::filesystem;
  comm::ensure_mpi();
  const std::string dir = test::shared_scratch_dir("steps");
  runtime::TrainerConfig o = small_gpt("dapple");
  o.steps = 3;
  o.checkpoint = dir;
  o.checkpoint_every = 1;
  o.keep_checkpoints = 2;
  Weights after_three;
  run(o, after_three);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_FALSE(fs::exists(dir + "/step-000001"));
  CHECK(fs::exists(dir + "/step-000002/manifest.json"));
  CHECK(fs::exists(dir + "/step-000003/manifest.json"));
  std::string latest;
  std::ifstream(dir + "/latest") >> latest;
  CHECK(latest == "step-000003");

  // What a save that died leaves: a step directory without its manifest, a .tmp file. Resuming
  // takes step 3 and gives the weights of an uninterrupted run; the next save cleans up.
  if (comm::world_rank() == 0) {
    fs::create_directories(dir + "/step-000004");
    std::ofstream(dir + "/step-000004/stage0.safetensors.tmp") << "half";
    std::ofstream(dir + "/latest.tmp") << "step-000004";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  runtime::TrainerConfig straight = small_gpt("dapple");
  straight.steps = 5;
  Weights expected;
  run(straight, expected);
  runtime::TrainerConfig more = small_gpt("dapple");
  more.steps = 5;
  more.resume = dir;
  more.checkpoint = dir;
  more.checkpoint_every = 1;
  Weights resumed;
  const runtime::TrainSummary rest = run(more, resumed);
  CHECK(rest.losses.size() == 2);
  CHECK(resumed == expected);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_FALSE(fs::exists(dir + "/latest.tmp"));
  CHECK_FALSE(fs::exists(dir + "/step-000004/stage0.safetensors.tmp"));
  CHECK_FALSE(fs::exists(dir + "/step-000003"));  // kept: 4 and 5

  // The single-directory layout (loom before step directories): DIR holds manifest.json itself.
  const std::string flat = dir + "/flat";
  if (comm::world_rank() == 0) {
    fs::create_directories(flat);
    for (const auto& entry : fs::directory_iterator(dir + "/step-000004")) fs::copy(entry.path(), flat);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  more.resume = flat;
  more.checkpoint.clear();
  more.checkpoint_every = 0;
  Weights from_flat;
  CHECK(run(more, from_flat).losses.size() == 1);
  CHECK(from_flat == expected);
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm::world_rank() == 0) fs::remove_all(dir);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("a missing checkpoint directory is a clear error", "[train][checkpoint]") {
  runtime::TrainerConfig o = small_gpt("dapple");
  o.steps = 2;
  o.resume = "/nonexistent/loom-checkpoint";
  CHECK_THROWS_WITH(test::train(o), Catch::Contains("/nonexistent/loom-checkpoint: cannot open the checkpoint directory"));
  o.resume.clear();
  o.checkpoint_every = 2;
  CHECK_THROWS_WITH(test::train(o), Catch::Contains("--checkpoint-every needs --checkpoint DIR"));
}

TEST_CASE("a checkpoint manifest nested 100,000 levels deep is refused while parsing, naming it", "[train][mpi][checkpoint]") {
  // It used to parse, then overflow the stack (SIGSEGV) comparing its fields.
  const std::string dir = test::shared_scratch_dir("deep");
  if (comm::world_rank() == 0) {
    std::filesystem::create_directories(dir);  // the single-directory layout: DIR/manifest.json
    std::ofstream(dir + "/manifest.json") << R"({"format": "loom-train-checkpoint/1", "settings": )"
                                          << std::string(100000, '[') << std::string(100000, ']') << "}";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  runtime::TrainerConfig o = small_gpt("dapple");
  o.steps = 2;
  o.resume = dir;
  CHECK_THROWS_WITH(test::train(o), Catch::Contains(dir + "/manifest.json:1:") &&
                                        Catch::Contains("JSON nested deeper than 512 levels"));
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm::world_rank() == 0) std::filesystem::remove_all(dir);
  MPI_Barrier(MPI_COMM_WORLD);
}
