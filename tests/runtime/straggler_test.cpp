// The straggler warning (issue 31): the detector's rule on hand-worked sequences; under mpiexec -n
// 2, the Trainer's step reports with fixed busy times fed through LOOM_TEST_BUSY_MS (rank 1 reported
// once, at step 3, the third step in a row over 1.5x the median), and a run in which
// LOOM_TEST_SLOW_RANK makes rank 1 sleep, whose busy time holds at least what it slept.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <loom/comm/runtime.h>
#include <loom/comm/test_slow.h>
#include <loom/runtime/straggler.h>
#include <loom/runtime/trainer.h>

using namespace loom;

TEST_CASE("straggler detector: over ratio x median for `steps` steps in a row, reported once per streak", "[runtime]") {
  runtime::StragglerDetector detector(1.5, 3);
  CHECK(detector.observe({1, 1, 1, 2}).empty());  // rank 3: 2 > 1.5 x median 1, streak 1
  CHECK(detector.median() == 1);
  CHECK(detector.observe({1, 1, 1, 2}).empty());  // streak 2
  CHECK(detector.observe({1, 1, 1, 2}) == std::vector<int>{3});  // streak 3: reported
  CHECK(detector.observe({1, 1, 1, 2}).empty());  // still slow: not again
  CHECK(detector.observe({1, 1, 1, 1.5}).empty());  // 1.5 is not over 1.5 x 1: the streak ends
  CHECK(detector.observe({2, 1, 1, 1}).empty());
  CHECK(detector.observe({2, 1, 1, 1}).empty());
  CHECK(detector.observe({2, 1, 1, 1}) == std::vector<int>{0});
  // Median of an even count: the mean of the middle two (1 and 3 -> 2); 4 > 3 flags rank 3.
  runtime::StragglerDetector one(1.5, 1);
  CHECK(one.observe({1, 1, 3, 4}) == std::vector<int>{3});
  CHECK(one.median() == 2);
  CHECK(one.observe({0, 0, 0, 5}).empty());  // median 0: nothing to compare with
  CHECK_THROWS_WITH(runtime::StragglerDetector(1.0, 3), Catch::Contains("the ratio must be above 1"));
}

namespace {

// A tiny mlp over 2 stages (M = 4: 8 compute actions per rank and step, each well under 1 ms), 5
// steps, every step's report kept.
std::vector<runtime::StepReport> run_two_stages(int* stage_of_rank_1 = nullptr) {
  runtime::TrainerConfig o;
  o.model = "mlp";
  o.overrides = "input=16,hidden=24,layers=4,classes=4";
  o.data = "synthetic";
  o.stages = 2;
  o.global_batch = 16;
  o.microbatches = 4;
  o.steps = 5;
  o.threads = 1;
  runtime::Trainer trainer(o);
  std::vector<runtime::StepReport> reports;
  runtime::TrainerHooks hooks;
  hooks.on_step = [&](const runtime::StepReport& r) { reports.push_back(r); };
  trainer.run(hooks);
  if (stage_of_rank_1) *stage_of_rank_1 = trainer.stage_of_rank(1);
  return reports;
}

}  // namespace

// LOOM_TEST_SLOW_RANK's sleeps are busy time: rank 1 sleeps 50 ms before each of its 8 compute
// actions, so its busy time is at least 400 ms a step (a lower bound; the detector's rule is the
// case above's).
TEST_CASE("a rank made slow spends its sleeps in its busy time", "[runtime][mpi]") {
  comm::ensure_mpi();
  REQUIRE(comm::world_size() == 2);
  // The hook reads its variable once, on first use: set it before any run of this process (this
  // case comes first).
  REQUIRE(setenv("LOOM_TEST_SLOW_RANK", "1:50", 1) == 0);
  CHECK(comm::test_slow_ms() == (comm::world_rank() == 1 ? 50 : 0));
  int stage_of_rank_1 = -1;
  const std::vector<runtime::StepReport> reports = run_two_stages(&stage_of_rank_1);
  REQUIRE(reports.size() == 5);
  for (const runtime::StepReport& r : reports) {
    INFO("step " << r.step);
    REQUIRE(r.rank_busy_seconds.size() == 2);
    CHECK(r.rank_busy_seconds[1] >= 0.4);  // 8 compute actions x 50 ms slept
  }
  CHECK(stage_of_rank_1 == 1);
}

// Fixed busy times through LOOM_TEST_BUSY_MS (no sleeps, no timing): rank 1 at 40 ms against rank
// 0's 10 ms is over 1.5 x the median 25 ms every step, so it is reported at step 3 and only then.
TEST_CASE("the step reports carry every rank's busy time and name a straggler at its third slow step", "[runtime][mpi]") {
  comm::ensure_mpi();
  REQUIRE(comm::world_size() == 2);
  REQUIRE(setenv("LOOM_TEST_BUSY_MS", "10,40", 1) == 0);
  const std::vector<runtime::StepReport> reports = run_two_stages();
  REQUIRE(unsetenv("LOOM_TEST_BUSY_MS") == 0);
  REQUIRE(reports.size() == 5);
  for (const runtime::StepReport& r : reports) {
    INFO("step " << r.step);
    CHECK(r.rank_busy_seconds == std::vector<double>{0.010, 0.040});
    CHECK(r.busy_median_seconds == Approx(0.025));
    CHECK(r.stragglers == (r.step == 3 ? std::vector<int>{1} : std::vector<int>{}));
  }
  REQUIRE(setenv("LOOM_TEST_BUSY_MS", "10,x", 1) == 0);
  CHECK_THROWS_WITH(comm::test_busy_seconds(), Catch::Contains("LOOM_TEST_BUSY_MS") && Catch::Contains("'10,x'"));
  REQUIRE(unsetenv("LOOM_TEST_BUSY_MS") == 0);
}
