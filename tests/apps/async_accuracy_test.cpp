// PipeDream and PipeDream-2BW train a (small) CNN on Fashion-MNIST to within 1 point of the
// synchronous schedule's test accuracy after one epoch, with the same hyper-parameters.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <string>

#include <loom/comm/runtime.h>

#include "training.h"

using namespace loom;

TEST_CASE("asynchronous schedules reach the synchronous accuracy on Fashion-MNIST", "[train][async][mpi][slow]") {
  comm::ensure_mpi();
  apps::TrainOptions o;
  o.model = "cnn";
  o.overrides = "channels=8,hidden=64";
  o.data = "fashion-mnist";
  o.stages = 2;
  o.global_batch = 64;
  o.microbatches = 4;
  o.epochs = 1;
  o.lr = 0.03;
  o.momentum = 0.5;
  o.threads = 1;
  o.quiet = true;
  std::map<std::string, double> accuracy;
  for (const std::string schedule : {"dapple", "pipedream", "pipedream-2bw"}) {
    o.schedule = schedule;
    const apps::TrainSummary summary = apps::train(o);
    REQUIRE(summary.test_accuracy.size() == 1);
    accuracy[schedule] = summary.test_accuracy[0];
    if (comm::world_rank() == 0) std::printf("%s: test accuracy %.4f\n", schedule.c_str(), accuracy[schedule]);
  }
  CHECK(accuracy["dapple"] > 0.80);
  CHECK(std::abs(accuracy["pipedream"] - accuracy["dapple"]) <= 0.01);
  CHECK(std::abs(accuracy["pipedream-2bw"] - accuracy["dapple"]) <= 0.01);
}
