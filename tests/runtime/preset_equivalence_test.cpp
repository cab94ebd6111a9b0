// The central correctness test for the papers' model families (VGG, ResNet, GNMT, BERT, XLNet,
// AmoebaNet) at tiny
// size: pipelined training over 4 stages, and over 2 stages x 2 replicas, under DAPPLE and ZB-H1,
// gives the per-step losses and trainable weights of the whole model trained on one rank
// (relative error <= 1e-5; with BatchNorm and replicas, the weights after the first step:
// check_equivalent). GNMT's cuts carry the encoder output with the decoder input, and the
// decoder state with the attention context; BERT's loss is over the masked positions only.
// Models with BatchNorm normalise over each micro-batch's share of a replica, so their reference
// runs the same M x R row ranges one after the other.
#include <catch2/catch.hpp>

#include <optional>

#include <loom/comm/mpi_session.h>

#include "sequential_reference.h"

using namespace loom;

namespace {

runtime::TrainerConfig tiny(const std::string& model) {
  runtime::TrainerConfig o;
  o.model = model;
  o.size = "tiny";
  o.data = "synthetic";
  o.global_batch = 32;
  o.microbatches = 4;
  o.steps = 3;
  o.seed = 11;
  o.threads = 1;
  o.optimizer = "sgd";  // see train_equivalence_test.cpp: Adam would amplify rounding noise
  o.lr = 0.05;
  o.momentum = 0.9;
  o.lr_schedule = "constant";
  o.bucket_mb = 0.001;
  o.ranks_per_node = std::string(1, '1');  // not = "1": GCC 12 -O3 warns falsely (bug 105329)
  // Tiny AmoebaNet (a BatchNorm after every operation of 4-8 channels, over micro-batches of 4 rows)
  // is chaotic at lr 0.05 with momentum: rounding differences of 1e-7 (summation order, oneDNN vs
  // im2col) grow to 1e-3 in three steps. At 32x32 and lr 0.005 it is not.
  if (model == "amoebanet36") {
    o.overrides = "image=32";
    o.lr = 0.005;
  }
  // Tiny ResNet-50 (BatchNorm over micro-batches of 4 rows) is chaotic at lr 0.05 too: with oneDNN's
  // AVX-512 kernels (a Xeon with avx512f) the per-step loss difference grows 0, 6e-8, 4.7e-6 and
  // the stem's BatchNorm bias ends 2% apart after three steps, with im2col (or AVX2) it stays below
  // 1e-5. At lr 0.005 the oneDNN run ends within 1.1e-6 of the reference.
  if (model == "resnet50") o.lr = 0.005;
  return o;
}

bool has_batch_norm(const std::string& model) { return model == "resnet50" || model == "amoebanet36"; }

// Trains `o` pipelined and compares its per-step losses (1e-5) and, given a tolerance, its final
// trainable weights with the one-rank reference.
void compare_with_sequential(const runtime::TrainerConfig& o, std::int64_t pieces, std::optional<double> weight_tolerance) {
  const test::SequentialRun reference = test::train_sequentially(o, pieces);
  std::map<std::string, std::vector<double>> trained;
  const runtime::TrainSummary summary = test::train(o, [&](const test::TrainedStage& stage) {
    for (Chain* chunk : stage.chunks)
      for (const NamedParameter& p : chunk->parameters())
        if (p.parameter->trainable) trained[p.name] = p.parameter->value.to_double_vector();
  });
  INFO(o.model << " " << o.schedule << " S=" << o.stages << " R=" << o.replicas << ", " << o.steps << " step(s)");
  REQUIRE(summary.losses.size() == reference.losses.size());
  for (std::size_t k = 0; k < reference.losses.size(); ++k) {
    INFO("step " << k << ": pipelined " << summary.losses[k] << ", sequential " << reference.losses[k]);
    CHECK(std::abs(summary.losses[k] - reference.losses[k]) <= 1e-5 * std::abs(reference.losses[k]));
  }
  REQUIRE(!trained.empty());
  if (!weight_tolerance) return;
  for (const auto& [name, values] : trained) {
    INFO("parameter " << name);
    REQUIRE(reference.parameters.count(name) == 1);
    CHECK(test::norm_relative_error(values, reference.parameters.at(name)) <= *weight_tolerance);
  }
}

void check_equivalent(const runtime::TrainerConfig& o) {
  const std::int64_t pieces = has_batch_norm(o.model) ? o.microbatches * o.replicas : 1;
  if (pieces == 1 || o.replicas == 1) {
    // One replica: the reference runs the M micro-batch row ranges one after the other and adds
    // their gradients in the order the stage accumulates them, so BatchNorm models match as tightly
    // as the others. (The 1e-4 this once allowed was for BatchNorm biases under replicas, whose
    // allreduce sums in another order: the case below.)
    compare_with_sequential(o, pieces, 1e-5);
    return;
  }
  // BatchNorm with replicas: the reference runs the M x R row ranges one after the other and sums
  // their gradients in another order than the replicas' allreduce, so the weights differ by f32
  // rounding after the first step (measured: 1.1e-7 ResNet-50, 3.6e-7 AmoebaNet). The tiny
  // BatchNorm models then amplify it, AmoebaNet most (its BatchNorm biases behind concatenations
  // get gradients that nearly cancel): on an AVX-512 EPYC with oneDNN its weights were 9.3e-6 apart
  // after two steps and 1.1e-2 after three (the losses within 1e-5 still), where other machines stayed
  // under 1e-4. So the weights are compared after one step, where the difference is the reduction
  // order alone, and the losses over all steps.
  runtime::TrainerConfig first = o;
  first.steps = 1;
  compare_with_sequential(first, pieces, 1e-5);
  compare_with_sequential(o, pieces, std::nullopt);
}

}  // namespace

TEST_CASE("the papers' model families train pipelined as they do sequentially", "[train][mpi][models]") {
  comm::ensure_mpi();
  REQUIRE(comm::world_size() == 4);
  const std::string model = GENERATE(as<std::string>{}, "vgg19", "resnet50", "gnmt16", "bert48", "xlnet36",
                                     "amoebanet36");
  for (const auto& [stages, replicas, schedule] : std::vector<std::tuple<int, int, std::string>>{
           {4, 1, "dapple"}, {2, 2, "dapple"}, {4, 1, "zb-h1"}}) {
    runtime::TrainerConfig o = tiny(model);
    o.stages = stages;
    o.replicas = replicas;
    o.schedule = schedule;
    check_equivalent(o);
  }
}

// Issue 28: V-shaped (ZB-V, DualPipeV) and looped zero-bubble schedules on paper families at tiny size (GNMT's
// boundaries carry two tensors, through the V's local turn too).
TEST_CASE("paper families train under ZB-V, interleaved zero bubble and DualPipeV as they do sequentially", "[train][mpi][models]") {
  comm::ensure_mpi();
  REQUIRE(comm::world_size() == 4);
  const std::string model = GENERATE(as<std::string>{}, "gnmt16", "bert48");
  for (const auto& [stages, replicas, schedule] : std::vector<std::tuple<int, int, std::string>>{
           {4, 1, "zb-v"}, {2, 2, "interleaved-zb"}, {4, 1, "dualpipev"}}) {
    runtime::TrainerConfig o = tiny(model);
    if (model == "bert48") o.overrides = "layers=6";  // 8 blocks: one per virtual stage of 4 stages x 2 chunks
    o.stages = stages;
    o.replicas = replicas;
    o.schedule = schedule;
    check_equivalent(o);
  }
}
