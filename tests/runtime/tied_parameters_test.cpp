// Tied parameters (the gpt preset ties its head's projection to the token embedding): pipelined
// training equals the one-rank reference, which ties them as PyTorch does (one tensor, one
// gradient buffer), with the embedding and the head on stages of unequal replica counts in both
// directions (a tied gradient summed twice, or once per replica, would fail it); the copies stay
// bit-identical over 50 steps of 2 stages x 2 replicas; a checkpoint stores the tied parameter
// once; an untied checkpoint of older loom is refused naming the tie; asynchronous schedules are
// refused.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <mpi.h>

#include <loom/comm/mpi_session.h>
#include <loom/runtime/checkpoint_reader.h>
#include <loom/runtime/training_checkpoint.h>

#include "checkpoint_run.h"
#include "sequential_reference.h"

using namespace loom;

namespace {

runtime::TrainerConfig tied_gpt() {
  runtime::TrainerConfig o = test::small_gpt_config(5);  // blocks: embedding, 6 layers, head
  o.steps = 3;
  return o;
}

std::string plan_file(const std::string& name, const std::string& stages) {
  const std::string path = test::shared_scratch_dir(name) + ".json";
  if (comm::world_rank() == 0)
    std::ofstream(path) << R"({"format": "loom-plan", "version": 1, "model": "gpt", "global_batch": 16,
      "microbatches": 4, "microbatch_size": 4, "schedule": "dapple", "stages": )" << stages << "}";
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

}  // namespace

TEST_CASE("tied: unequal replicas on the embedding's and the head's stages equal the one-rank reference",
          "[train][mpi][ties]") {
  REQUIRE(comm::world_size() == 4);
  const test::SequentialRun reference = test::train_sequentially(tied_gpt());
  const std::vector<std::pair<std::string, std::string>> plans = {
      {"head replicated", R"([{"layers": [0, 2], "replicas": 1, "ranks": [0]},
                              {"layers": [3, 4], "replicas": 1, "ranks": [1]},
                              {"layers": [5, 7], "replicas": 2, "ranks": [2, 3]}])"},
      {"embedding replicated", R"([{"layers": [0, 2], "replicas": 2, "ranks": [0, 1]},
                                   {"layers": [3, 4], "replicas": 1, "ranks": [2]},
                                   {"layers": [5, 7], "replicas": 1, "ranks": [3]}])"}};
  for (const auto& [name, stages] : plans) {
    INFO(name);
    runtime::TrainerConfig o = tied_gpt();
    o.plan = plan_file("tied_plan", stages);
    test::Weights weights;
    const runtime::TrainSummary summary = test::train_keeping_weights(o, weights);
    REQUIRE(summary.losses.size() == reference.losses.size());
    for (std::size_t k = 0; k < reference.losses.size(); ++k)
      CHECK(summary.losses[k] == Approx(reference.losses[k]).epsilon(1e-5));
    for (const auto& [parameter, values] : weights) {
      INFO("parameter " << parameter);
      CHECK(test::norm_relative_error(values, reference.parameters.at(parameter)) <= 1e-5);
    }
    if (comm::world_rank() == 0) std::filesystem::remove(o.plan);
  }
}

TEST_CASE("tied: the copies stay bit-identical over 50 steps of 2 stages x 2 replicas", "[train][mpi][ties]") {
  runtime::TrainerConfig o = tied_gpt();
  o.stages = 2, o.replicas = comm::world_size() / 2, o.steps = 50;
  test::Weights weights;
  test::train_keeping_weights(o, weights);
  // Rank 0 holds the embedding (stage 0), the last rank the head (the last stage).
  std::vector<double> embedding = comm::world_rank() == 0 ? weights.at("0.token.weight") : std::vector<double>();
  int size = static_cast<int>(embedding.size());
  MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD);
  embedding.resize(static_cast<std::size_t>(size));
  MPI_Bcast(embedding.data(), size, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  CHECK(size == 256 * 16);
  // Every replica of the last stage compares its head, every other replica of stage 0 its
  // embedding, with rank 0's embedding: R and R - 1 comparisons in all, counted.
  int compared[2] = {0, 0};
  if (weights.count("7.1.weight")) {
    ++compared[0];
    CHECK(weights.at("7.1.weight") == embedding);
  }
  if (comm::world_rank() != 0 && weights.count("0.token.weight")) {
    ++compared[1];
    CHECK(weights.at("0.token.weight") == embedding);
  }
  MPI_Allreduce(MPI_IN_PLACE, compared, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(compared[0] == o.replicas);
  CHECK(compared[1] == o.replicas - 1);
}

TEST_CASE("tied: a checkpoint stores the parameter once; untied checkpoints of older loom are named",
          "[train][mpi][ties][checkpoint]") {
  runtime::TrainerConfig o = tied_gpt();
  o.stages = comm::world_size();
  o.checkpoint = test::shared_scratch_dir("tied");
  test::Weights ignored;
  test::train_keeping_weights(o, ignored);
  runtime::CheckpointReader reader(runtime::find_checkpoint(o.checkpoint));
  int canonical = 0, copy = 0;
  for (std::size_t s = 0; s < reader.stages().size(); ++s)
    for (const safetensors::Entry& entry : reader.file(s).header().entries) {
      canonical += entry.name == "0.token.weight" || entry.name == "optimizer.0.token.weight.momentum_buffer";
      copy += entry.name.rfind("7.1.weight", 0) == 0 || entry.name.rfind("optimizer.7.1.weight", 0) == 0;
    }
  CHECK(canonical == 2);  // the value and its momentum, once
  CHECK(copy == 0);

  // A checkpoint of loom before ties: its settings lack tie_embeddings.
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string manifest = reader.manifest_path();
  if (comm::world_rank() == 0) {
    std::ifstream in(manifest);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const auto at = text.find("\"tie_embeddings\"");
    REQUIRE(at != std::string::npos);
    text.erase(at, text.find(',', at) + 1 - at);
    std::ofstream(manifest) << text;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  runtime::TrainerConfig resumed = o;
  resumed.checkpoint.clear();
  resumed.resume = o.checkpoint;
  resumed.steps = 4;
  CHECK_THROWS_WITH(test::train(resumed), Catch::Contains(manifest) && Catch::Contains("tie_embeddings=0"));
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm::world_rank() == 0) std::filesystem::remove_all(o.checkpoint);
}

TEST_CASE("tied: asynchronous schedules are refused, naming the setting", "[train][mpi][ties]") {
  runtime::TrainerConfig o = tied_gpt();
  o.stages = comm::world_size();
  o.schedule = "pipedream";
  CHECK_THROWS_WITH(test::train(o), Catch::Contains("tie_embeddings=0"));
  o.overrides += ",tie_embeddings=0";
  CHECK_NOTHROW(test::train(o));
}
