// LossScaler (runtime/loss_scaler.h), the dynamic loss scaling of fp16 training, on a hand-worked
// sequence of steps: an overflow halves the scale and restarts the count of good steps, the
// window-th good step in a row doubles it, restore() takes a checkpoint's state, and the limits
// are errors that name the flag.
#include <catch2/catch.hpp>

#include <loom/runtime/loss_scaler.h>

using namespace loom;
using runtime::LossScaler;
using runtime::LossScalerOptions;

TEST_CASE("the loss scale halves on overflow and doubles after a window of good steps", "[runtime][fp16]") {
  LossScaler scaler(LossScalerOptions{1024.0, 3});
  CHECK(scaler.scale() == 1024.0);
  CHECK(scaler.scale() == 1024.0);
  // step:      1     2     3      4     5     6     7     8     9
  // overflow:  no    no    yes    no    no    no    no    no    no
  // used:      1024  1024  1024   512   512   512   1024  1024  1024
  // after:     1024  1024  512    512   512   1024  1024  1024  2048
  const bool overflow[] = {false, false, true, false, false, false, false, false, false};
  const double used[] = {1024, 1024, 1024, 512, 512, 512, 1024, 1024, 1024};
  const double after[] = {1024, 1024, 512, 512, 512, 1024, 1024, 1024, 2048};
  const std::int64_t good[] = {1, 2, 0, 1, 2, 0, 1, 2, 0};
  for (int step = 0; step < 9; ++step) {
    INFO("step " << step + 1);
    scaler.update(overflow[step]);
    CHECK(scaler.last_scale() == used[step]);
    CHECK(scaler.last_skipped() == overflow[step]);
    CHECK(scaler.scale() == after[step]);
    CHECK(scaler.scale() == after[step]);  // what the next step's backward starts from
    CHECK(scaler.good_steps() == good[step]);
  }
  scaler.restore(96.0, 2);  // a checkpoint's state: the next good step doubles
  scaler.update(false);
  CHECK(scaler.scale() == 192.0);
  CHECK(scaler.good_steps() == 0);
}

TEST_CASE("the loss scale's limits", "[runtime][fp16]") {
  CHECK_THROWS_WITH(LossScaler(LossScalerOptions{0.0, 10}), Catch::Contains("--loss-scale must be in [2^-24, 2^64], got 0"));
  CHECK_THROWS_WITH(LossScaler(LossScalerOptions{1e30, 10}), Catch::Contains("--loss-scale must be in [2^-24, 2^64]"));
  CHECK_THROWS_WITH(LossScaler(LossScalerOptions{8.0, 0}), Catch::Contains("--loss-scale-window must be at least 1, got 0"));
  LossScaler low(LossScalerOptions{runtime::kMinLossScale * 2, 1});
  low.update(true);  // down to 2^-24: still allowed
  CHECK(low.scale() == runtime::kMinLossScale);
  CHECK_THROWS_WITH(low.update(true), Catch::Contains("fp16 loss scale fell below 2^-24") &&
                                          Catch::Contains("training diverged"));
  LossScaler high(LossScalerOptions{runtime::kMaxLossScale, 1});
  high.update(false);  // at 2^64 it stays
  CHECK(high.scale() == runtime::kMaxLossScale);
}
