// Checkpoints keyed by parameter: one written at 4 stages x 1 replica resumes at other layouts of
// the same model on the same 4 ranks: 2 stages x 2 replicas, 2 stages x 2 chunks (interleaved) x
// 2 replicas, and a plan with an uneven partition and uneven replicas. After the resume, the next
// steps' losses and the final weights equal an uninterrupted run at the new layout (relative 1e-5:
// the 3 steps before the checkpoint ran at another layout, whose gradient sums add in another
// order, the tolerance of the pipelined-vs-sequential tests), and at the writing layout bit for
// bit. The tensors a rank loads are the saved ones bit for bit (a whole model read through
// CheckpointReader against the writers' weights; the last stage's tied copy of the word embedding,
// stored once, equals it). Dropout is on: its masks are keyed by step and
// sample, not by rank, so they carry over too.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include <mpi.h>

#include <loom/comm/mpi_session.h>
#include <loom/models/model.h>
#include <loom/runtime/checkpoint_reader.h>
#include <loom/runtime/training_checkpoint.h>

#include "checkpoint_run.h"

using namespace loom;

namespace {

runtime::TrainerConfig small_gpt() {
  runtime::TrainerConfig o = test::small_gpt_config(11);
  o.stages = 4;
  o.schedule = "dapple";
  return o;
}

using test::Weights;

runtime::TrainSummary run(const runtime::TrainerConfig& o, Weights& weights) {
  return test::train_keeping_weights(o, weights);
}

double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff += (a[i] - b[i]) * (a[i] - b[i]), norm += b[i] * b[i];
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// Stage 0 blocks [0, 3) alone, stage 1 [3, 5) alone, stage 2 [5, 8) on two replicas.
std::string write_uneven_plan(const std::string& dir) {
  const std::string path = dir + "-plan.json";
  if (comm::world_rank() == 0) {
    std::ofstream(path) << R"({"format": "loom-plan", "version": 1, "model": "gpt", "global_batch": 16,
      "microbatches": 4, "microbatch_size": 4, "schedule": "dapple",
      "stages": [{"layers": [0, 2], "replicas": 1, "ranks": [0]},
                 {"layers": [3, 4], "replicas": 1, "ranks": [1]},
                 {"layers": [5, 7], "replicas": 2, "ranks": [2, 3]}]})";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

struct Layout {
  std::string name;
  runtime::TrainerConfig config;
};

std::vector<Layout> layouts(const std::string& plan) {
  std::vector<Layout> all;
  runtime::TrainerConfig o = small_gpt();
  all.push_back({"4 stages x 1 (the writer's)", o});
  o.stages = 2, o.replicas = 2;
  all.push_back({"2 stages x 2 replicas", o});
  o.schedule = "interleaved", o.chunks = 2;
  all.push_back({"2 stages x 2 chunks x 2 replicas", o});
  o = small_gpt();
  o.stages = 1, o.schedule = "", o.plan = plan;
  all.push_back({"uneven plan (3 + 2 + 3 blocks, replicas 1, 1, 2)", o});
  return all;
}

}  // namespace

TEST_CASE("a checkpoint written at 4 x 1 resumes at 2 x 2, interleaved and an uneven plan", "[train][mpi][checkpoint]") {
  comm::ensure_mpi();
  REQUIRE(comm::world_size() == 4);
  const std::string dir = test::shared_scratch_dir("gpt");
  runtime::TrainerConfig writer = small_gpt();
  writer.steps = 3;
  writer.checkpoint = dir;
  Weights saved;
  run(writer, saved);

  for (const Layout& layout : layouts(write_uneven_plan(dir))) {
    INFO("resumed at " << layout.name);
    runtime::TrainerConfig straight = layout.config;
    straight.steps = 6;
    Weights expected;
    const runtime::TrainSummary whole = run(straight, expected);
    runtime::TrainerConfig resumed = straight;
    resumed.resume = dir;
    Weights found;
    const runtime::TrainSummary rest = run(resumed, found);

    const bool writers_layout = layout.name.find("writer") != std::string::npos;
    REQUIRE(rest.losses.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
      if (writers_layout) CHECK(rest.losses[k] == whole.losses[k + 3]);  // bit for bit
      CHECK(rest.losses[k] == Approx(whole.losses[k + 3]).epsilon(1e-5));
    }
    REQUIRE(found.size() == expected.size());
    for (const auto& [name, values] : expected) {
      INFO("parameter " << name);
      REQUIRE(found.count(name) == 1);
      if (writers_layout) CHECK(found.at(name) == values);
      CHECK(relative_error(found.at(name), values) <= 1e-5);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm::world_rank() == 0) std::filesystem::remove_all(dir), std::filesystem::remove(dir + "-plan.json");
}

TEST_CASE("the whole model read through CheckpointReader holds the writers' tensors bit for bit", "[train][mpi][checkpoint]") {
  comm::ensure_mpi();
  const std::string dir = test::shared_scratch_dir("whole");
  runtime::TrainerConfig writer = small_gpt();
  writer.stages = comm::world_size();
  writer.steps = 2;
  writer.checkpoint = dir;
  Weights mine;  // this rank's stage, as the writer left it
  run(writer, mine);
  MPI_Barrier(MPI_COMM_WORLD);

  const ModelSpec spec = make_model("gpt", "seq=8,dim=16,heads=2,layers=6,dropout=10");
  std::unique_ptr<Chain> whole = spec.build_all();
  whole->initialize(99);  // other values than the checkpoint's, to be overwritten
  runtime::CheckpointReader reader(runtime::find_checkpoint(dir));
  CHECK(reader.step() == 2);
  CHECK(reader.stages().size() == static_cast<std::size_t>(comm::world_size()));
  std::map<std::string, std::string> ties;  // the head's projection is stored as the word embedding
  for (const ParameterTie& tie : spec.ties) ties[tie.copy] = tie.canonical;
  REQUIRE(ties.size() == 1);
  reader.load(whole->parameters(), nullptr, {{0, spec.blocks()}}, writer.seed, ties);
  std::size_t compared = 0;
  for (const NamedParameter& p : whole->parameters()) {
    const auto it = mine.find(p.name);
    if (it == mine.end()) continue;
    INFO("parameter " << p.name);
    CHECK(p.parameter->value.to_double_vector() == it->second);
    ++compared;
  }
  CHECK(compared == mine.size());

  // A missing tensor is named, with its file's directory.
  std::vector<NamedParameter> stranger = whole->parameters();
  Parameter extra;
  extra.value = Tensor::zeros({2});
  stranger.push_back({"3.not_a_parameter", &extra});
  CHECK_THROWS_WITH(reader.load(stranger, nullptr, {{0, spec.blocks()}}, writer.seed, ties),
                    Catch::Contains("no stage file holds parameter '3.not_a_parameter'"));
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm::world_rank() == 0) std::filesystem::remove_all(dir);
}
