// The config of the device tests: a tiny preset, 2 stages x `replicas`, Adam at a constant rate,
// 4 micro-batches of a 16-sample batch, one math thread.
#pragma once

#include <string>

#include <loom/runtime/trainer.h>

namespace loom::test {

inline runtime::TrainerConfig tiny_run(const std::string& model, const std::string& device, int replicas,
                                       std::int64_t steps) {
  runtime::TrainerConfig c;
  c.model = model;
  c.size = "tiny";
  c.device = device;
  c.stages = 2;
  c.replicas = replicas;
  c.microbatches = 4;
  c.global_batch = 16;
  c.steps = steps;
  c.optimizer = "adam";
  c.lr = 0.01;
  c.lr_schedule = "constant";
  c.seed = 11;
  c.threads = 1;
  return c;
}

}  // namespace loom::test
