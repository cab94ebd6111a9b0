// Bad `loom train` input gives one clear loom::Error (the app turns it into a one-line message and a
// non-zero exit on every rank; tests/apps/cli_errors.cmake checks that end to end under mpiexec).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>

#include "training.h"

using namespace loom;

TEST_CASE("bad training options are rejected with clear messages", "[train][errors]") {
  const std::vector<std::pair<std::function<void(apps::TrainOptions&)>, std::string>> cases{
      {[](auto& o) { o.stages = 2; }, "needs 2"},  // a world of one cannot hold 2 stages
      {[](auto& o) { o.microbatches = 0; }, "--microbatches must be at least 1"},
      {[](auto& o) { o.model = "resnet"; }, "unknown model 'resnet'"},
      {[](auto& o) { o.data = "mnist"; }, "unknown dataset 'mnist'"},
      {[](auto& o) { o.schedule = "1f1b"; }, "unknown schedule '1f1b'"},
      {[](auto& o) { o.global_batch = 30; }, "not divisible by 4 micro-batches"},
      {[](auto& o) { o.steps = 0; }, "exactly one of --steps K or --epochs E"},
      {[](auto& o) { o.plan = "/nonexistent/plan.json"; }, "/nonexistent/plan.json"},
      {[](auto& o) { o.overrides = "layers=1"; }, "layers=1 must be an integer >= 2"},
      {[](auto& o) { o.overrides = "depth=3"; }, "has no setting 'depth'"},
      {[](auto& o) { o.optimizer = "lamb"; }, "unknown optimizer 'lamb'"},
      {[](auto& o) { o.optimizer = "momentum", o.momentum = 0; }, "--optimizer momentum needs --momentum > 0"},
      {[](auto& o) { o.plan = "plan.json", o.schedule = "gpipe"; }, "do not go together: the plan names its schedule"},
      {[](auto& o) { o.log_every = 0; }, "--log-every must be at least 1"},
      // issue 15: numbers outside their ranges were taken silently
      {[](auto& o) { o.lr = std::numeric_limits<double>::infinity(); }, "--lr must be in (0, 1000]"},
      {[](auto& o) { o.lr = 1e30; }, "--lr must be in (0, 1000]"},
      {[](auto& o) { o.clip_norm = -1; }, "--clip-norm must be finite and >= 0"},
      {[](auto& o) { o.clip_norm = std::nan(""); }, "--clip-norm must be finite and >= 0"},
      {[](auto& o) { o.momentum = 2; }, "--momentum must be in [0, 1)"},
      {[](auto& o) { o.warmup_steps = -5; }, "--warmup-steps must be >= 0"},
      {[](auto& o) { o.threads = -3; }, "--threads must be 0 (automatic) or in [1, 1024]"},
      {[](auto& o) { o.threads = 100000; }, "--threads must be 0 (automatic) or in [1, 1024]"},
      {[](auto& o) { o.steps = 0, o.epochs = std::numeric_limits<std::int64_t>::max(); }, "--epochs must be in [1, 1000000]"},
      {[](auto& o) { o.stages = 3, o.replicas = 1431655766; }, "needs 4294967298"},
      // issue 15 defect 8: impossible sizes are refused from the meta build, before any allocation
      {[](auto& o) { o.overrides = "hidden=300000"; }, "needs at least 2162.98 GB"},
      {[](auto& o) { o.model = "gpt", o.overrides = "seq=10000000"; }, "one micro-batch of activations"},
      {[](auto& o) { o.overrides = "layers=100000000"; }, "more than 10000 blocks"},
      {[](auto& o) { o.model = "amoebanet18", o.size = "tiny", o.overrides = "layers=9750"; },
       "layers=9750 is more than 1500 cells"},  // a fuzz finding: 28 s to describe under ASan
      {[](auto& o) { o.schedule = "pipedream", o.steps = 100000000; }, "more than the 1048576 it holds"},
  };
  for (const auto& [spoil, message] : cases) {
    apps::TrainOptions o;
    o.quiet = true;
    o.steps = 1;
    o.microbatches = 4;
    spoil(o);
    CHECK_THROWS_WITH(apps::train(o), Catch::Contains(message));
  }
}

TEST_CASE("a model larger than the memory available to a rank is refused before it is built", "[train][errors]") {
  setenv("LOOM_MEMORY_LIMIT_MB", "64", 1);  // as if this machine had 64 MiB per rank
  apps::TrainOptions o;
  o.overrides = "hidden=4096";  // 37 M parameters: 445 MB with gradients and momentum
  o.steps = 1;
  o.quiet = true;
  CHECK_THROWS_WITH(apps::train(o), Catch::Contains("needs at least 443.5 MB per rank of stage 0") &&
                                        Catch::Contains("67.1 MB is available to rank 0 (LOOM_MEMORY_LIMIT_MB)") &&
                                        Catch::Contains("use --size cpu"));
  o.overrides = "hidden=64";
  CHECK_NOTHROW(apps::train(o));
  unsetenv("LOOM_MEMORY_LIMIT_MB");
}

// A tie on one stage is one tensor: the copy adds its gradient only. gpt with vocab 4096 x dim 64:
// 579,008 values in the blocks, 262,144 of them the tied decoder. Untied: parameters and gradients
// 2 x 2.316 MB, momentum 2.316 MB; tied: 1.049 MB less of each of the first and of the state.
TEST_CASE("the memory check counts a tie on one stage once", "[train][errors]") {
  setenv("LOOM_MEMORY_LIMIT_MB", "1", 1);
  apps::TrainOptions o;
  o.model = "gpt";
  o.size = "cpu";
  o.data = "synthetic";
  o.steps = 1;
  o.quiet = true;
  o.overrides = "tie_embeddings=0,vocab=4096,dim=64,layers=1,heads=2,seq=8";
  CHECK_THROWS_WITH(apps::train(o), Catch::Contains("(parameters and gradients 4.6 MB, optimizer state 2.3 MB"));
  o.overrides = "tie_embeddings=1,vocab=4096,dim=64,layers=1,heads=2,seq=8";
  CHECK_THROWS_WITH(apps::train(o), Catch::Contains("(parameters and gradients 3.6 MB, optimizer state 1.3 MB"));
  unsetenv("LOOM_MEMORY_LIMIT_MB");
}

TEST_CASE("on a device, the memory check counts the device's memory, not the host's", "[train][errors][sim]") {
  setenv("LOOM_SIM_MEMORY_MB", "64", 1);  // a 64 MiB device (the host has gigabytes)
  apps::TrainOptions o;
  o.device = "sim";
  o.overrides = "hidden=4096";
  o.steps = 1;
  o.quiet = true;
  CHECK_THROWS_WITH(apps::train(o), Catch::Contains("needs at least 443.5 MB per rank of stage 0") &&
                                        Catch::Contains("67.1 MB is available to rank 0 (sim:0: 67.1 MB free)"));
  unsetenv("LOOM_SIM_MEMORY_MB");
}

TEST_CASE("LOOM_NUM_THREADS must be a whole count", "[train][errors]") {
  apps::TrainOptions o;
  o.quiet = true;
  o.steps = 1;
  setenv("LOOM_NUM_THREADS", "4abc", 1);
  CHECK_THROWS_WITH(apps::train(o), Catch::Contains("LOOM_NUM_THREADS='4abc' is not a count"));
  setenv("LOOM_NUM_THREADS", "1", 1);
}

TEST_CASE("a diverging run stops with the step and the cause", "[train][errors]") {
  apps::TrainOptions o;
  o.quiet = true;
  o.steps = 20;
  o.lr = 1000;
  o.momentum = 0.9;
  o.lr_schedule = "constant";
  o.threads = 1;
  CHECK_THROWS_WITH(apps::train(o), Catch::Contains(": the global-batch loss is") && Catch::Contains("training diverged"));
}
