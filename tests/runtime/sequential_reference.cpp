#include "sequential_reference.h"

#include "pytorch_ties.h"

#include <cmath>

#include <loom/base/error.h>
#include <loom/layers/loss.h>
#include <loom/layers/optimizer.h>
#include <loom/models/dataset.h>
#include <loom/models/model.h>

namespace loom::test {

namespace {
// Global batch `step` (the epoch's seeded order) through the whole model, in `pieces` equal runs
// of consecutive rows (1: the whole batch at once; M x R: each micro-batch's share of each replica,
// as the pipeline runs them, which models with BatchNorm need); the loss is the batch mean over
// its (non-ignored) targets, gradients accumulate into the parameters.
double forward_backward(const runtime::TrainerConfig& o, const Dataset& data, std::int64_t step, Layer& model,
                        Layer& loss, std::int64_t pieces = 1) {
  const std::int64_t per_epoch = data.size() / o.global_batch;
  const auto order = epoch_order(data.size(), o.seed, step / per_epoch);
  const std::int64_t base = (step % per_epoch) * o.global_batch;
  std::vector<std::int64_t> indices(order.begin() + base, order.begin() + base + o.global_batch);
  Tensor x, y;
  data.read(indices, x, y);
  const double targets = static_cast<double>(count_targets(y));
  const std::int64_t rows = o.global_batch / pieces;
  double value = 0;
  for (std::int64_t piece = 0; piece < pieces; ++piece) {
    Context ctx, loss_ctx;
    ctx.seed = loss_ctx.seed = o.seed;
    ctx.step = loss_ctx.step = static_cast<std::uint64_t>(step);
    ctx.first_sample = loss_ctx.first_sample = piece * rows;
    if (pieces > 1) loss_ctx.loss_denominator = targets;
    const Tensor logits = model.forward({x.slice(piece * rows, (piece + 1) * rows)}, ctx).at(0);
    value += loss.forward({logits, y.slice(piece * rows, (piece + 1) * rows)}, loss_ctx).at(0).item();
    model.backward({loss.backward({Tensor::full({}, 1.0)}, loss_ctx).at(0)}, ctx);
  }
  return value;
}
}  // namespace

SequentialRun train_sequentially(const runtime::TrainerConfig& o, std::int64_t pieces) {
  const ModelSpec spec = make_model(o.model, o.overrides, parse_model_size(o.size));
  auto model = spec.build_all();
  model->initialize(o.seed);
  const std::vector<NamedParameter> trainable = tie_as_pytorch(spec, *model);
  LayerPtr loss = spec.make_loss();
  auto data = open_dataset(o.data, DatasetSplit::train, spec.data, o.seed);
  std::unique_ptr<Optimizer> optimizer;
  if (o.optimizer == "sgd")
    optimizer = std::make_unique<Sgd>(trainable, SgdOptions{o.momentum, 0, false, o.weight_decay});
  else
    optimizer = std::make_unique<Adam>(trainable, AdamOptions{0.9, 0.999, 1e-8, o.weight_decay, o.optimizer == "adamw"});
  SequentialRun run;
  for (std::int64_t step = 0; step < o.steps; ++step) {
    run.losses.push_back(forward_backward(o, *data, step, *model, *loss, pieces));
    optimizer->step(o.lr);
    optimizer->zero_grad();
  }
  for (const NamedParameter& p : model->parameters()) run.parameters[p.name] = p.parameter->value.to_double_vector();
  return run;
}

}  // namespace loom::test

namespace loom::test {

SequentialRun train_with_versions(const runtime::TrainerConfig& o, const std::vector<std::vector<int>>& version,
                                  const std::vector<int>& stage_of_block) {
  const ModelSpec spec = make_model(o.model, o.overrides, parse_model_size(o.size));
  auto model = spec.build_all();
  model->initialize(o.seed);
  LayerPtr loss = spec.make_loss();
  auto data = open_dataset(o.data, DatasetSplit::train, spec.data, o.seed);
  auto params = trainable_parameters(*model);
  Sgd optimizer(params, SgdOptions{o.momentum, 0, false, o.weight_decay});
  // Which stage each parameter belongs to (its block is the first component of its name).
  std::vector<int> stage_of_param;
  for (const NamedParameter& p : params) stage_of_param.push_back(stage_of_block.at(std::stoi(p.name)));
  std::vector<std::vector<Tensor>> history{{}};  // history[k][i]: parameter i after k updates
  for (const NamedParameter& p : params) history[0].push_back(p.parameter->value.clone());
  SequentialRun run;
  for (std::int64_t n = 0; n < o.steps; ++n) {
    for (std::size_t i = 0; i < params.size(); ++i)
      params[i].parameter->value = history.at(version.at(stage_of_param[i]).at(n))[i].clone();
    run.losses.push_back(forward_backward(o, *data, n, *model, *loss));
    for (std::size_t i = 0; i < params.size(); ++i) params[i].parameter->value = history.back()[i].clone();
    optimizer.step(o.lr);
    optimizer.zero_grad();
    history.emplace_back();
    for (const NamedParameter& p : params) history.back().push_back(p.parameter->value.clone());
  }
  for (const NamedParameter& p : model->parameters()) run.parameters[p.name] = p.parameter->value.to_double_vector();
  return run;
}

}  // namespace loom::test
