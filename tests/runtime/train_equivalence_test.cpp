// The central correctness test: K steps of pipelined training, for every synchronous schedule and
// every (stages, replicas) that fits this world, and with activation recomputation, give the same per-step losses and final weights as
// the whole model trained sequentially on one rank (relative error <= 1e-5). Dropout is on (gpt).
#include <catch2/catch.hpp>

#include <fstream>

#include <mpi.h>

#include <loom/comm/mpi_session.h>

#include "equivalence_models.h"
#include "sequential_reference.h"

using namespace loom;

namespace {

using test::small_model;

// Every (stages, replicas) of the test's layouts that this world runs.
std::vector<std::pair<int, int>> layouts_of_this_world() {
  comm::ensure_mpi();
  const int world = comm::world_size();
  std::vector<std::pair<int, int>> layouts;
  for (auto [s, r] : std::vector<std::pair<int, int>>{{2, 1}, {4, 1}, {2, 2}, {4, 2}})
    if (s * r == world) layouts.emplace_back(s, r);
  return layouts;
}

// Trains `base` pipelined under each schedule (with recomputation where paired with true) and
// compares every step's loss and every final weight with `reference`.
void check_schedules(const runtime::TrainerConfig& base, const test::SequentialRun& reference,
                     const std::vector<std::pair<std::string, bool>>& schedules) {
  const std::string model = base.model;
  for (const auto& [stages, replicas] : layouts_of_this_world())
    for (const auto& [schedule, recompute] : schedules) {
      runtime::TrainerConfig o = base;
      o.stages = stages;
      o.replicas = replicas;
      o.recompute = recompute;
      o.schedule = schedule;
      o.allreduce = replicas > 1 && stages == 2 ? "ring" : "hierarchical";
      // One rank per pretend node: replica groups span "nodes", so the inter-node step runs.
      o.ranks_per_node = std::to_string(1);  // (a literal here trips GCC 12's bogus -Wrestrict)
      test::Weights trained;
      const runtime::TrainSummary summary = test::train_keeping_weights(o, trained);
      INFO(model << " " << schedule << (recompute ? " +recompute" : "") << " S=" << stages << " R=" << replicas);
      test::check_losses(summary.losses, reference.losses, 1e-5);
      test::check_final_weights(trained, reference.parameters, 1e-5);
    }
}

}  // namespace

TEST_CASE("pipelined training equals sequential training", "[train][mpi]") {
  REQUIRE(!layouts_of_this_world().empty());
  for (const std::string model : {"mlp", "gpt"}) {
    const runtime::TrainerConfig base = small_model(model);
    check_schedules(base, test::train_sequentially(base),
                    {{"gpipe", false}, {"dapple", false}, {"interleaved", false}, {"zb-h1", false}, {"dapple", true}});
  }
}

// Issue 28: the schedules users reach for today, looped (2 chunks per rank, c·S + s) and V-shaped
// (chunk 0 of rank r holds virtual stage r, chunk 1 holds 2S − 1 − r: the turn at the last rank
// is a local hand-over).
TEST_CASE("the zero-bubble, looped and V-shaped schedules equal sequential training", "[train][mpi]") {
  REQUIRE(!layouts_of_this_world().empty());
  for (const std::string model : {"mlp", "gpt"}) {
    const runtime::TrainerConfig base = small_model(model);
    check_schedules(base, test::train_sequentially(base),
                    {{"zb-h2", false}, {"looped-bfs", false}, {"interleaved-zb", false}, {"zb-v", false},
                     {"v-half", false}, {"v-min", false}, {"zb-v", true}});
  }
}

// Issue 28: DualPipeV, whose overlapped pairs (F of one chunk with B of the other) the executor
// interleaves block by block (runtime/src/overlap_pair.cpp), with and without recomputation.
TEST_CASE("DualPipeV equals sequential training", "[train][mpi]") {
  REQUIRE(!layouts_of_this_world().empty());
  for (const std::string model : {"mlp", "gpt"}) {
    const runtime::TrainerConfig base = small_model(model);
    check_schedules(base, test::train_sequentially(base), {{"dualpipev", false}, {"dualpipev", true}});
  }
}

// Issue 28: schedules from files in PyTorch's CSV notation (torch.distributed.pipelining's
// _dump_csv form: a row per rank, cells STAGE OP MICROBATCH, I/W the split backward), written by
// hand for S = 2, M = 4 (DualPipeV's with the overlapped pairs of PyTorch's OVERLAP_F_B cells): the
// file sets the stages, chunks and placement, replicas = ranks / 2. Losses and final weights.
TEST_CASE("schedules from PyTorch CSV files equal sequential training", "[train][mpi][schedule-file]") {
  comm::ensure_mpi();
  const std::vector<std::pair<std::string, std::string>> files = {
      {"gpipe", "0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\r\n1F0,1F1,1F2,1F3,1B0,1B1,1B2,1B3\r\n"},
      {"1f1b", "0F0,0F1,0B0,0F2,0B1,0F3,0B2,0B3\r\n1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\r\n"},
      {"interleaved-1f1b",  // looped: rank 0 holds stages 0 and 2, rank 1 stages 1 and 3
       "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3\r\n"
       "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3\r\n"},
      {"zb-v",  // V: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2 (the turn is local)
       "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3,0I0,0W0,3F2,3I2,3W2,0I1,0W1,3F3,3I3,3W3,0I2,0W2,0I3,0W3\r\n"
       "1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1F3,1I1,1W1,2F3,2I2,2W2,1I2,2I3,1I3,1W2,2W3,1W3\r\n"},
      {"dualpipev",  // V as zb-v, with PyTorch's overlapped pairs (F of one stage; B of another)
       "0F0,0F1,0F2,3F0,3I0,3W0,3F1,(0F3;3B1)OVERLAP_F_B,(3F2;0B0)OVERLAP_F_B,3B2,(3F3;0B1)OVERLAP_F_B,3B3,0I2,0W2,"
       "0I3,0W3\r\n"
       "1F0,2F0,1F1,2F1,1F2,2B0,(2F2;1B0)OVERLAP_F_B,(1F3;2B1)OVERLAP_F_B,(2F3;1B1)OVERLAP_F_B,2B2,1B2,2I3,1I3,2W3,"
       "1W3\r\n"}};
  for (const std::string model : {"mlp", "gpt"}) {
    runtime::TrainerConfig base = small_model(model);
    const test::SequentialRun reference = test::train_sequentially(base);
    for (const auto& [name, csv] : files) {
      const std::string path = std::string(LOOM_BINARY_DIR) + "/tests/runtime/schedule-" + name + "-" +
                               std::to_string(comm::world_rank()) + ".csv";
      std::ofstream(path, std::ios::binary) << csv;
      runtime::TrainerConfig o = base;
      o.schedule_file = path;
      o.stages = o.chunks = 0;  // the file's (stages and chunks given must agree with it)
      o.bucket_mb = 0.001;
      test::Weights trained;
      const runtime::TrainSummary summary = test::train_keeping_weights(o, trained);
      INFO(model << " " << name << " from " << path << ", " << comm::world_size() / 2 << " replicas");
      test::check_losses(summary.losses, reference.losses, 1e-5);
      // The final weights: the last optimizer step, after the last W passes and DualPipeV's pairs.
      test::check_final_weights(trained, reference.parameters, 1e-5);
    }
  }
}
