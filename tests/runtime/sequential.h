// The one-rank reference for runtime tests: a whole model chain run micro-batch by micro-batch with
// plain layer calls (no runner, no executor), reading global batch b as the Trainer does (epoch
// order, rows even_split(B, M, j) for micro-batch j), with the loss scaled to the batch mean.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <loom/comm/range_split.h>
#include <loom/layers/loss.h>
#include <loom/layers/optimizer.h>
#include <loom/models/dataset.h>
#include <loom/models/model.h>

#include "sequential_run.h"

namespace loom::test {

// `steps` steps of SGD (momentum 0, constant `lr`; lr = 0: gradients only) with M micro-batches of
// a global batch B: the losses, the first step's logits and gradients, the final parameters.
inline SequentialRun run_sequentially(const ModelSpec& spec, std::uint64_t seed, std::int64_t global_batch,
                                      int microbatches, int steps, double lr) {
  auto data = open_dataset("synthetic", DatasetSplit::train, spec.data, seed);
  auto model = spec.build_all();
  model->initialize(seed);
  LayerPtr loss = spec.make_loss();
  Sgd sgd(trainable_parameters(*model), SgdOptions{0.0, 0.0, false, 0.0});
  const std::vector<std::int64_t> order = epoch_order(data->size(), seed, 0);
  SequentialRun run;
  for (int step = 0; step < steps; ++step) {
    double total = 0;
    for (int j = 0; j < microbatches; ++j) {
      const comm::Range rows = comm::even_split(global_batch, microbatches, j);
      const std::vector<std::int64_t> indices(order.begin() + step * global_batch + rows.begin,
                                              order.begin() + step * global_batch + rows.end);
      Tensor x, y;
      data->read(indices, x, y);
      Context ctx, loss_ctx;
      for (Context* c : {&ctx, &loss_ctx}) {
        c->seed = seed;
        c->step = static_cast<std::uint64_t>(step);
        c->first_sample = rows.begin;
      }
      loss_ctx.loss_denominator = static_cast<double>(global_batch * spec.targets_per_sample);
      const TensorList logits = model->forward({x}, ctx);
      if (step == 0) run.logits.push_back(logits[0].to_float_vector());
      const Tensor value = loss->forward({logits[0], y}, loss_ctx)[0];
      total += value.item();
      const Tensor one = Tensor::full({}, 1.0, value.dtype(), value.device());
      model->backward({loss->backward({one}, loss_ctx)[0]}, ctx);
    }
    run.losses.push_back(total);
    if (step == 0)
      for (const NamedParameter& p : trainable_parameters(*model)) run.gradients[p.name] = p.parameter->grad.to_float_vector();
    if (lr > 0) sgd.step(lr);
    sgd.zero_grad();
  }
  for (const NamedParameter& p : model->parameters()) run.parameters[p.name] = p.parameter->value.to_double_vector();
  return run;
}

}  // namespace loom::test
