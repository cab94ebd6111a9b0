// The small models the equivalence tests train pipelined and sequentially: an 8-block mlp and a
// gpt of 6 layers (8 blocks) with dropout on, 3 steps of SGD with momentum at a constant rate.
#pragma once

#include <string>

#include <loom/runtime/trainer_config.h>

namespace loom::test {

inline runtime::TrainerConfig small_model(const std::string& model) {
  runtime::TrainerConfig o;
  o.model = model;
  o.overrides = model == "mlp" ? "input=16,hidden=24,layers=8,classes=4" : "seq=8,dim=16,heads=2,layers=6,dropout=10";
  o.data = "synthetic";
  o.global_batch = 16;
  o.microbatches = 4;
  o.steps = 3;
  o.seed = 5;
  o.threads = 1;
  // SGD, not Adam: the key bias of attention has an exactly-zero true gradient, so its computed
  // gradient is rounding noise, which Adam's normalisation would blow up to full-size updates.
  o.optimizer = "sgd";
  o.lr = model == "mlp" ? 0.1 : 0.05;
  o.momentum = 0.9;
  o.lr_schedule = "constant";  // the reference steps with a constant rate
  o.bucket_mb = 0.001;  // several buckets even for these small models
  return o;
}

}  // namespace loom::test
