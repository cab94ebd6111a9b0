// bf16 training (runtime/precision.h) under mpiexec -n 4, on the tiny gpt preset:
//   - boundary tensors cross stages as bf16 (half the bytes) and widen back to f32 exactly;
//   - pipelined over 4 stages it equals, bit for bit, a one-rank bf16 run written here with plain
//     layer calls: the test's own fp32 master copy, parameters rounded to bf16 after each step,
//     inputs, block outputs, the loss gradient and every block's input gradient rounded, the
//     blocks run under ops::Bf16GemmScope (their GEMMs on bf16 operands);
//   - after 200 steps of Adam its loss is within 2% of the fp32 run's (measured with bf16 GEMM
//     operands: 2.5001 against 2.5164 on one machine, 2.4744 against 2.5152 on an AVX-512 EPYC,
//     1.6%), and not equal to it (rounding happens), and its parameters are
//     bf16 values;
//   - a resume from a bf16 checkpoint (the fp32 masters) continues the curve bit for bit, and a
//     resume with another --precision is refused by name.
#include <loom/comm/partition.h>
#include <loom/comm/runtime.h>
#include <loom/core/ops.h>
#include <loom/layers/optimizer.h>
#include <loom/models/dataset.h>
#include <loom/models/model.h>
#include <loom/runtime/precision.h>
#include <loom/runtime/trainer.h>
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "run_dir.h"

using namespace loom;

namespace {

runtime::TrainerConfig gpt_run(const std::string& precision, std::int64_t steps) {
  runtime::TrainerConfig c;
  c.model = "gpt";
  c.size = "tiny";
  c.stages = 4;
  c.microbatches = 4;
  c.global_batch = 16;
  c.steps = steps;
  c.optimizer = "sgd";
  c.momentum = 0.0;
  c.lr = 0.5;
  c.lr_schedule = "constant";
  c.seed = 11;
  c.threads = 1;
  c.precision = precision;
  return c;
}

void round_all(const TensorList& tensors) {
  for (Tensor t : tensors)
    if (t.defined() && t.dtype() == DType::f32) ops::round_to_bf16_(t);
}

// The one-rank bf16 reference: SGD (momentum 0) on fp32 masters, micro-batches
// as the Trainer reads them.
std::vector<double> bf16_sequentially(const runtime::TrainerConfig& c) {
  const ModelSpec spec = make_model(c.model, c.overrides, parse_model_size(c.size));
  auto data = open_dataset("synthetic", DatasetSplit::train, spec.data, c.seed);
  auto model = spec.build_all();
  model->initialize(c.seed);
  LayerPtr loss = spec.make_loss();
  std::vector<Parameter> masters;
  std::vector<Parameter*> weights;
  for (const NamedParameter& p : trainable_parameters(*model)) {
    masters.push_back({p.parameter->name, p.parameter->value.clone(), p.parameter->grad, p.parameter->init, true});
    weights.push_back(p.parameter);
  }
  std::vector<NamedParameter> named;
  for (Parameter& m : masters) named.push_back({m.name, &m});
  Sgd sgd(named, SgdOptions{0.0, 0.0, false, 0.0});
  const auto publish = [&] {
    for (std::size_t i = 0; i < weights.size(); ++i) {
      ops::copy(masters[i].value, weights[i]->value);
      ops::round_to_bf16_(weights[i]->value);
    }
  };
  publish();
  const std::vector<std::int64_t> order = epoch_order(data->size(), c.seed, 0);
  std::vector<double> losses;
  for (std::int64_t step = 0; step < c.steps; ++step) {
    double total = 0;
    for (int j = 0; j < c.microbatches; ++j) {
      const comm::Range rows = comm::even_split(c.global_batch, c.microbatches, j);
      const std::vector<std::int64_t> indices(order.begin() + step * c.global_batch + rows.begin,
                                              order.begin() + step * c.global_batch + rows.end);
      Tensor x, y;
      data->read(indices, x, y);
      Context ctx, loss_ctx;
      for (Context* context : {&ctx, &loss_ctx}) {
        context->seed = c.seed;
        context->step = static_cast<std::uint64_t>(step);
        context->first_sample = rows.begin;
      }
      loss_ctx.loss_denominator = static_cast<double>(c.global_batch * spec.targets_per_sample);
      TensorList h = {x};
      round_all(h);
      {
        const ops::Bf16GemmScope math;  // the blocks' GEMMs on bf16 operands
        for (std::size_t b = 0; b < model->size(); ++b) {
          h = model->block(b).forward(h, ctx.child(b));
          round_all(h);
        }
      }
      const Tensor value = loss->forward({h[0], y}, loss_ctx)[0];
      total += value.item();
      TensorList g = {loss->backward({Tensor::full({}, 1.0, value.dtype(), value.device())}, loss_ctx)[0]};
      round_all(g);
      const ops::Bf16GemmScope math;
      for (std::size_t b = model->size(); b-- > 0;) {
        g = model->block(b).backward(g, ctx.child(b));
        round_all(g);
      }
    }
    losses.push_back(total);
    sgd.step(c.lr);
    sgd.zero_grad();
    publish();
  }
  return losses;
}

std::vector<double> train(const runtime::TrainerConfig& config, bool* bf16_values = nullptr) {
  runtime::Trainer trainer(config);
  const std::vector<double> losses = trainer.run().losses;
  if (bf16_values) {
    *bf16_values = true;
    for (Chain* chunk : trainer.chunks())
      for (const NamedParameter& p : trainable_parameters(*chunk))
        for (float v : p.parameter->value.to_float_vector()) {
          std::uint32_t bits;
          std::memcpy(&bits, &v, 4);
          *bf16_values = *bf16_values && (bits & 0xffffu) == 0;
        }
    int all = *bf16_values ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    *bf16_values = all == 1;
  }
  return losses;
}

}  // namespace

TEST_CASE("bf16: boundary tensors cross as bf16 and widen back exactly; fp32 sends them as they are",
          "[runtime][bf16]") {
  Tensor activations = Tensor::from_vector<float>({1.0f, -3.14159f, 1e-20f, 65504.5f, -0.0f, 7.0e30f}, {2, 3});
  ops::round_to_bf16_(activations);  // as at every block boundary of a bf16 run
  const Tensor tokens = Tensor::from_vector<std::int64_t>({3, 1, 4}, {3});
  const TensorList list = {activations, tokens, Tensor()};
  const TensorList wire = runtime::to_boundary(list, runtime::Precision::bf16);
  REQUIRE(wire.size() == 3);
  CHECK(wire[0].dtype() == DType::bf16);
  CHECK(wire[0].nbytes() * 2 == activations.nbytes());  // half the bytes on the link
  CHECK(wire[1].same_storage(tokens));                 // token ids pass through
  CHECK_FALSE(wire[2].defined());
  const TensorList back = runtime::from_boundary(wire, runtime::Precision::bf16);
  CHECK(back[0].dtype() == DType::f32);
  CHECK(back[0].to_double_vector() == activations.to_double_vector());  // nothing lost
  CHECK(back[1].same_storage(tokens));
  const TensorList plain = runtime::to_boundary(list, runtime::Precision::fp32);
  CHECK(plain[0].same_storage(activations));
  CHECK(runtime::from_boundary(plain, runtime::Precision::fp32)[0].same_storage(activations));
}

TEST_CASE("bf16: 4 pipeline stages equal the one-rank bf16 run bit for bit", "[runtime][bf16][mpi]") {
  REQUIRE(comm::world_size() == 4);
  const runtime::TrainerConfig config = gpt_run("bf16", 4);
  const std::vector<double> reference = bf16_sequentially(config);
  const std::vector<double> pipelined = train(config);
  REQUIRE(pipelined.size() == 4);
  for (std::size_t k = 0; k < reference.size(); ++k) {
    INFO("step " << k + 1 << ": pipelined " << pipelined[k] << ", one rank " << reference[k]);
    CHECK(pipelined[k] == reference[k]);
  }
  // The fp32 reference of the same run differs: the rounding is there.
  CHECK(train(gpt_run("fp32", 4)) != pipelined);
}

TEST_CASE("bf16: the loss after 200 steps is within 2% of fp32's", "[runtime][bf16][mpi]") {
  constexpr std::int64_t kSteps = 200;
  runtime::TrainerConfig fp32 = gpt_run("fp32", kSteps), bf16 = gpt_run("bf16", kSteps);
  for (runtime::TrainerConfig* c : {&fp32, &bf16}) {
    c->optimizer = "adam";
    c->lr = 0.01;
  }
  bool bf16_values = false;
  const std::vector<double> full = train(fp32);
  const std::vector<double> mixed = train(bf16, &bf16_values);
  REQUIRE(mixed.size() == static_cast<std::size_t>(kSteps));
  const double last_full = full.back(), last_mixed = mixed.back();
  INFO("fp32: " << full.front() << " -> " << last_full << ", bf16: " << mixed.front() << " -> " << last_mixed);
  CHECK(last_full < 0.8 * full.front());  // it trains
  CHECK(std::abs(last_mixed - last_full) <= 0.02 * last_full);
  CHECK(mixed != full);
  CHECK(bf16_values);  // the layers computed with bf16 parameters
}

TEST_CASE("bf16: a resume continues bit for bit; another --precision is refused", "[runtime][bf16][mpi]") {
  const std::string dir = test::fresh_run_dir("bf16_ckpt");
  runtime::TrainerConfig first = gpt_run("bf16", 4);
  first.optimizer = "adam";
  first.lr = 0.01;
  first.checkpoint = dir;
  first.checkpoint_every = 2;
  const std::vector<double> whole = train(first);
  REQUIRE(whole.size() == 4);

  runtime::TrainerConfig resumed = first;
  resumed.checkpoint.clear();
  resumed.checkpoint_every = 0;
  resumed.resume = (std::filesystem::path(dir) / "step-000002").string();
  const std::vector<double> rest = train(resumed);
  REQUIRE(rest.size() == 2);
  CHECK(rest[0] == whole[2]);
  CHECK(rest[1] == whole[3]);

  resumed.precision = "fp32";
  CHECK_THROWS_WITH(runtime::Trainer(resumed),
                    Catch::Contains("manifest.json") &&
                        Catch::Contains("trained with --precision bf16, this run has --precision fp32"));
  resumed.precision = "fp16";
  CHECK_THROWS_WITH(runtime::Trainer(resumed), Catch::Contains("--precision must be fp32 or bf16, got 'fp16'"));
}
