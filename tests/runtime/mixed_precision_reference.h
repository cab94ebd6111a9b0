// The one-rank reference of bf16 and fp16 training (runtime/precision.h), written with plain layer
// calls on the tiny gpt preset: the test's own fp32 master copy, parameters rounded to the
// precision after each step; inputs, block outputs, the loss gradient and every block's input
// gradient rounded; the blocks under ops::GemmOperandScope; backward started from the loss scale
// and SGD (momentum 0) dividing the gradients by it again. Micro-batches as the Trainer reads them.
// The pipelined Trainer must equal it bit for bit (trainer_bf16_test.cpp, trainer_fp16_test.cpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <loom/comm/range_split.h>
#include <loom/core/ops.h>
#include <loom/layers/optimizer.h>
#include <loom/models/dataset.h>
#include <loom/models/model.h>

#include "pytorch_ties.h"
#include "sequential_run.h"
#include <loom/runtime/precision.h>
#include <loom/runtime/trainer.h>

namespace loom::test {

// The tiny gpt over 4 stages, M=4, B=16, SGD without momentum at lr 0.5, one thread. Untied: the
// comparisons here are bit for bit, and a tied gradient is summed in another order by the pipeline
// (the head's micro-batches, then the embedding's, then the two) than by a one-buffer reference
// (head and embedding of each micro-batch in turn); tied runs are compared within 1e-5
// (tied_parameters_test.cpp, train_equivalence_test.cpp).
inline runtime::TrainerConfig gpt_run(const std::string& precision, std::int64_t steps) {
  runtime::TrainerConfig c;
  c.model = "gpt";
  c.size = "tiny";
  c.overrides = "tie_embeddings=0";
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

// The same run for 200 steps of Adam at lr 0.01: long enough to compare a precision's loss curve
// with fp32's (tail_mean).
inline runtime::TrainerConfig gpt_adam_run(const std::string& precision) {
  runtime::TrainerConfig c = gpt_run(precision, 200);
  c.optimizer = "adam";
  c.lr = 0.01;
  return c;
}

inline void round_all(const TensorList& tensors, DType values) {
  for (Tensor t : tensors)
    if (t.defined() && t.dtype() == DType::f32) ops::round_to_(t, values);
}

// Per-step losses and final weights (the rounded values the layers compute with, by parameter
// name) of `c` trained on this rank alone in `c.precision` (bf16 or fp16) with a constant loss
// scale (1 for bf16; for fp16 one that does not overflow on this run).
inline SequentialRun mixed_precision_sequentially(const runtime::TrainerConfig& c, double loss_scale = 1.0) {
  const DType values = runtime::value_dtype(runtime::parse_precision(c.precision));
  const ModelSpec spec = make_model(c.model, c.overrides, parse_model_size(c.size));
  auto data = open_dataset("synthetic", DatasetSplit::train, spec.data, c.seed);
  auto model = spec.build_all();
  model->initialize(c.seed);
  const std::vector<NamedParameter> trainable = tie_as_pytorch(spec, *model);
  LayerPtr loss = spec.make_loss();
  std::vector<Parameter> masters;
  std::vector<Parameter*> weights;
  for (const NamedParameter& p : trainable) {
    masters.push_back({p.parameter->name, p.parameter->value.clone(), p.parameter->grad, p.parameter->init, true});
    weights.push_back(p.parameter);
  }
  std::vector<NamedParameter> named;
  for (Parameter& m : masters) named.push_back({m.name, &m});
  Sgd sgd(named, SgdOptions{0.0, 0.0, false, 0.0});
  const auto publish = [&] {
    for (std::size_t i = 0; i < weights.size(); ++i) {
      ops::copy(masters[i].value, weights[i]->value);
      ops::round_to_(weights[i]->value, values);
    }
  };
  publish();
  const std::vector<std::int64_t> order = epoch_order(data->size(), c.seed, 0);
  SequentialRun run;
  std::vector<double>& losses = run.losses;
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
      round_all(h, values);
      {
        const ops::GemmOperandScope math(values);  // the blocks' GEMMs on 16-bit operands
        for (std::size_t b = 0; b < model->size(); ++b) {
          h = model->block(b).forward(h, ctx.child(b));
          round_all(h, values);
        }
      }
      const Tensor value = loss->forward({h[0], y}, loss_ctx)[0];
      total += value.item();
      TensorList g = {loss->backward({Tensor::full({}, loss_scale, value.dtype(), value.device())}, loss_ctx)[0]};
      round_all(g, values);
      const ops::GemmOperandScope math(values);
      for (std::size_t b = model->size(); b-- > 0;) {
        g = model->block(b).backward(g, ctx.child(b));
        round_all(g, values);
      }
    }
    losses.push_back(total);
    sgd.step(c.lr, 1.0 / loss_scale);
    sgd.zero_grad();
    publish();
  }
  for (const NamedParameter& p : trainable) run.parameters[p.name] = p.parameter->value.to_double_vector();
  return run;
}

// The mean of the last `count` per-step losses: one global batch's loss varies from batch to batch
// by more than the 16-bit rounding moves it, so curves are compared on this.
inline double tail_mean(const std::vector<double>& losses, std::size_t count = 20) {
  const std::size_t first = losses.size() > count ? losses.size() - count : 0;
  double sum = 0;
  for (std::size_t i = first; i < losses.size(); ++i) sum += losses[i];
  return sum / static_cast<double>(losses.size() - first);
}

// Whether every trainable parameter the layers of `trainer` compute with is a `values` value
// (bf16 or f16), on every rank.
inline bool parameters_are(const runtime::Trainer& trainer, DType values) {
  bool all = true;
  for (Chain* chunk : trainer.chunks())
    for (const NamedParameter& p : trainable_parameters(*chunk)) {
      Tensor rounded = p.parameter->value.to(Device::cpu()).clone();
      ops::round_to_(rounded, values);
      all = all && rounded.to_double_vector() == p.parameter->value.to_double_vector();
    }
  int everywhere = all ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return everywhere == 1;
}

}  // namespace loom::test
