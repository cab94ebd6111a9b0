// Builds against an installed loom without MPI: a model trained from layers, a checkpoint round
// trip, a published profile planned, a paper-model preset built. Exits non-zero on any mismatch.
//   consumer WORKDIR PROFILES_DIR   (PROFILES_DIR: the repository's data/profiles)
#include <cmath>
#include <cstdio>
#include <string>

#include <loom/core/ops.h>
#include <loom/core/tensor.h>
#include <loom/layers/activation.h>
#include <loom/layers/checkpoint.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/optimizer.h>
#include <loom/layers/sequential.h>
#include <loom/models/model.h>
#include <loom/planner/cluster.h>
#include <loom/planner/dapple_planner.h>
#include <loom/planner/graph_profile.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/validator.h>

namespace {
int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("consumer: %-60s %s\n", what.c_str(), ok ? "ok" : "WRONG");
  failures += ok ? 0 : 1;
}

// A two-layer MLP learns y = class of (x0 > x1) on a fixed batch: the loss must fall.
double train_from_layers(loom::Sequential& model) {
  std::vector<float> x;
  std::vector<std::int64_t> y;
  for (int i = 0; i < 32; ++i) {
    const float a = static_cast<float>((i * 7) % 11) - 5, b = static_cast<float>((i * 5) % 13) - 6;
    x.insert(x.end(), {a, b});
    y.push_back(a > b ? 1 : 0);
  }
  const loom::Tensor inputs = loom::Tensor::from_vector<float>(x, {32, 2});
  const loom::Tensor targets = loom::Tensor::from_vector<std::int64_t>(y, {32});
  loom::CrossEntropyLoss loss;
  loom::Sgd sgd(loom::trainable_parameters(model), {0.9});
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    loom::Context ctx, loss_ctx;
    const loom::TensorList logits = model.forward({inputs}, ctx);
    const loom::Tensor value = loss.forward({logits[0], targets}, loss_ctx)[0];
    (step == 0 ? first : last) = value.item();
    const loom::Tensor one = loom::Tensor::full({}, 1.0, value.dtype(), value.device());
    model.backward({loss.backward({one}, loss_ctx)[0]}, ctx);
    sgd.step(0.1);
    sgd.zero_grad();
  }
  std::printf("consumer: loss %.4f -> %.4f\n", first, last);
  return last / first;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: consumer WORKDIR PROFILES_DIR\n");
    return 2;
  }
  const std::string work = argv[1];
  try {
    const loom::Tensor a = loom::Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
    expect(loom::ops::matmul(a, a).to_float_vector() == std::vector<float>{7, 10, 15, 22}, "matmul");

    loom::Sequential model;
    model.add(std::make_unique<loom::Linear>(2, 16)).add(std::make_unique<loom::ReLU>()).add(std::make_unique<loom::Linear>(16, 2));
    model.initialize(7, 0);
    expect(train_from_layers(model) < 0.5, "a model built from layers trains (loss halves)");

    loom::save_checkpoint(work + "/model.safetensors", model);
    loom::Sequential copy;
    copy.add(std::make_unique<loom::Linear>(2, 16)).add(std::make_unique<loom::ReLU>()).add(std::make_unique<loom::Linear>(16, 2));
    copy.initialize(8, 0);
    loom::load_checkpoint(work + "/model.safetensors", copy);
    const auto original = model.parameters(), loaded = copy.parameters();
    bool same = original.size() == loaded.size();
    for (std::size_t i = 0; same && i < original.size(); ++i)
      same = original[i].parameter->value.to_float_vector() == loaded[i].parameter->value.to_float_vector();
    expect(same, "checkpoint round trip (safetensors)");

    const loom::ModelSpec gpt = loom::make_model("gpt", "layers=2,dim=32,heads=2,seq=16");
    auto chain = gpt.build(0, gpt.blocks());
    expect(chain->size() == static_cast<std::size_t>(gpt.blocks()) && gpt.blocks() == 4, "gpt preset builds (4 blocks)");

    const auto schedule = loom::schedule::dapple(4, 8);
    loom::schedule::validate(schedule);
    expect(schedule.batches() == 1 && schedule.microbatches_per_batch() == 8, "dapple schedule: one step of 8 micro-batches");

    const auto profile = loom::planner::read_graph_profile(std::string(argv[2]) + "/dapple/vgg-19-pbs-32.txt");
    const auto result = loom::planner::plan_dapple(profile, loom::planner::cluster_preset("A"), 1024);
    std::printf("consumer: VGG-19 on cluster A: %s, %.1f ms per step\n", result.plan.strategy().c_str(),
                result.plan.predicted_step_ms);
    expect(result.found && result.plan.devices_used() >= 1, "DAPPLE plans the published VGG-19 profile");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: error: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
