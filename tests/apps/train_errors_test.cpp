// Bad `loom train` input gives one clear loom::Error (the app turns it into a one-line message and a
// non-zero exit on every rank; the CLI test in tests/apps checks that end to end).
#include <catch2/catch.hpp>

#include "training.h"

using namespace loom;

TEST_CASE("bad training options are rejected with clear messages", "[train][errors]") {
  apps::TrainOptions o;
  o.quiet = true;
  o.steps = 1;
  auto fails_with = [&](apps::TrainOptions bad, const std::string& text) {
    CHECK_THROWS_WITH(apps::train(bad), Catch::Contains(text));
  };
  apps::TrainOptions bad = o;
  bad.stages = 2;  // a world of one cannot hold 2 stages
  fails_with(bad, "needs 2");
  bad = o;
  bad.microbatches = 0;
  fails_with(bad, "--microbatches must be at least 1");
  bad = o;
  bad.model = "resnet";
  fails_with(bad, "unknown model 'resnet'");
  bad = o;
  bad.data = "mnist";
  fails_with(bad, "unknown dataset 'mnist'");
  bad = o;
  bad.schedule = "1f1b";
  fails_with(bad, "unknown schedule '1f1b'");
  bad = o;
  bad.global_batch = 30;
  bad.microbatches = 4;
  fails_with(bad, "not divisible by 4 micro-batches");
  bad = o;
  bad.steps = 0;
  fails_with(bad, "exactly one of --steps K or --epochs E");
  bad = o;
  bad.plan = "/nonexistent/plan.json";
  fails_with(bad, "/nonexistent/plan.json");
  bad = o;
  bad.overrides = "layers=1";
  fails_with(bad, "layers=1 must be an integer >= 2");
  bad = o;
  bad.overrides = "depth=3";
  fails_with(bad, "has no setting 'depth'");
}
