// The straggler warning: the detector's rule on hand-worked sequences (a rank against the median
// of its stage's other replicas, over the ratio and the least busy time, for `steps` counted steps
// after the warm-up); under mpiexec -n 2, a real straggler among replicas (LOOM_TEST_SLOW_RANK:
// rank 1 sleeps 50 ms before each of its compute actions) reported after the warm-up and streak,
// and fixed busy times fed through LOOM_TEST_BUSY_MS: among replicas rank 1 is reported at exactly
// the step the rule gives, and across two stages (an uneven partition) never.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include <loom/comm/mpi_session.h>
#include <loom/comm/detail/test_hooks.h>
#include <loom/runtime/straggler.h>
#include <loom/runtime/trainer.h>

using namespace loom;

TEST_CASE("straggler detector: a rank against its stage's other replicas, after the warm-up, once per streak", "[runtime]") {
  // Ranks 0-2 are stage 0's replicas, rank 3 is stage 1 alone; 2 warm-up steps, then 3 in a row.
  runtime::StragglerDetector detector({0, 0, 0, 1}, {.ratio = 1.5, .steps = 3, .warmup_steps = 2, .min_seconds = 0.5});
  CHECK(detector.observe({1, 1, 2, 9}).empty());  // warm-up step 1: not counted
  CHECK(detector.references() == std::vector<double>{1.5, 1.5, 1, 0});  // rank 3 has no other replica
  CHECK(detector.observe({1, 1, 2, 9}).empty());  // warm-up step 2
  CHECK(detector.observe({1, 1, 2, 9}).empty());  // rank 2: 2 > 1.5 x 1, streak 1; rank 3 never
  CHECK(detector.observe({1, 1, 2, 9}).empty());  // streak 2
  CHECK(detector.observe({1, 1, 2, 9}) == std::vector<int>{2});  // streak 3: reported
  CHECK(detector.observe({1, 1, 2, 9}).empty());  // still slow: not again
  CHECK(detector.observe({1, 1, 1.5, 9}).empty());  // 1.5 is not over 1.5 x 1: the streak ends
  CHECK(detector.observe({2, 1, 1, 9}).empty());
  CHECK(detector.observe({2, 1, 1, 9}).empty());
  CHECK(detector.observe({2, 1, 1, 9}) == std::vector<int>{0});
  // Below the least busy time nothing is reported, however large the ratio.
  runtime::StragglerDetector small({0, 0}, {.ratio = 1.5, .steps = 1, .warmup_steps = 0, .min_seconds = 0.01});
  CHECK(small.observe({0.001, 0.009}).empty());
  CHECK(small.observe({0.001, 0.011}) == std::vector<int>{1});
  // Median of an even count of other replicas: the mean of the middle two (1 and 3 -> 2).
  runtime::StragglerDetector four({0, 0, 0, 0}, {.ratio = 1.5, .steps = 1, .warmup_steps = 0, .min_seconds = 0});
  CHECK(four.observe({1, 3, 9, 4}) == std::vector<int>{2});  // 9 > 1.5 x median(1, 3, 4) = 3
  CHECK(four.references() == std::vector<double>{4, 4, 3, 3});
  CHECK(four.observe({0, 0, 0, 5}).empty());  // a median of 0: nothing to compare with
  CHECK(runtime::StragglerDetector().observe({1, 9}).empty());  // watching nothing
  CHECK_THROWS_WITH(runtime::StragglerDetector({0}, {.ratio = 1.0}), Catch::Contains("the ratio must be above 1"));
  // Cores shared on a node: 4 ranks x 1 thread on 2 cores is oversubscribed, 2 x 1 is not.
  CHECK(runtime::cores_shared(4, 1, 2) == "4 ranks x 1 thread share 2 cores on a node");
  CHECK(runtime::cores_shared(2, 2, 2) == "2 ranks x 2 threads share 2 cores on a node");
  CHECK(runtime::cores_shared(2, 1, 2).empty());
}

namespace {

// A tiny mlp on 2 ranks (M = 4: 8 compute actions per rank and step, each well under 1 ms), as
// `stages` stages of 2 / stages replicas, every step's report kept.
std::vector<runtime::StepReport> run_tiny(int stages, int steps, std::string* notice = nullptr) {
  runtime::TrainerConfig o;
  o.model = "mlp";
  o.overrides = "input=16,hidden=24,layers=4,classes=4";
  o.data = "synthetic";
  o.stages = stages;
  o.replicas = 2 / stages;
  o.global_batch = 16;
  o.microbatches = 4;
  o.steps = steps;
  o.threads = 1;
  runtime::Trainer trainer(o);
  if (notice) *notice = trainer.straggler_notice();
  std::vector<runtime::StepReport> reports;
  runtime::TrainerHooks hooks;
  hooks.on_step = [&](const runtime::StepReport& r) { reports.push_back(r); };
  trainer.run(hooks);
  return reports;
}

// 2 ranks x 1 thread have a core each on this machine (else busy times are not compared at all).
bool cores_of_their_own() {
  if (std::thread::hardware_concurrency() >= 2) return true;
  WARN("SKIPPED: fewer than 2 cores, so the 2 ranks share one and no busy times are compared");
  return false;
}

}  // namespace

// LOOM_TEST_SLOW_RANK's sleeps are busy time: rank 1 sleeps 50 ms before each of its 8 compute
// actions, so its busy time is at least 400 ms a step, against its replica's few milliseconds: it
// is reported at step 5, the third counted step after 2 warm-up steps, and only then.
TEST_CASE("a rank made slow among replicas is reported as a straggler", "[runtime][mpi]") {
  comm::ensure_mpi();
  REQUIRE(comm::world_size() == 2);
  // The hook reads its variable once, on first use: set it before any run of this process (this
  // case comes first).
  REQUIRE(setenv("LOOM_TEST_SLOW_RANK", "1:50", 1) == 0);
  CHECK(comm::test_slow_ms() == (comm::world_rank() == 1 ? 50 : 0));
  if (!cores_of_their_own()) return;
  std::string notice = "unset";
  const std::vector<runtime::StepReport> reports = run_tiny(1, 6, &notice);
  CHECK(notice.empty());
  REQUIRE(reports.size() == 6);
  for (const runtime::StepReport& r : reports) {
    INFO("step " << r.step);
    REQUIRE(r.rank_busy_seconds.size() == 2);
    CHECK(r.rank_busy_seconds[1] >= 0.4);  // 8 compute actions x 50 ms slept
    CHECK(r.stragglers == (r.step == 5 ? std::vector<int>{1} : std::vector<int>{}));
  }
}

// Fixed busy times through LOOM_TEST_BUSY_MS (no sleeps, no timing): rank 1 at 40 ms, rank 0 at
// 10 ms. As two replicas of one stage, rank 1 is over 1.5 x its replica's 10 ms every step and is
// reported at step 5 only; as two stages (an uneven partition, not a slow rank) nobody is.
TEST_CASE("fixed busy times: replicas compared, stages never", "[runtime][mpi]") {
  comm::ensure_mpi();
  REQUIRE(comm::world_size() == 2);
  if (!cores_of_their_own()) return;
  REQUIRE(setenv("LOOM_TEST_BUSY_MS", "10,40", 1) == 0);
  const std::vector<runtime::StepReport> replicas = run_tiny(1, 6), stages = run_tiny(2, 6);
  REQUIRE(unsetenv("LOOM_TEST_BUSY_MS") == 0);
  REQUIRE(replicas.size() == 6);
  REQUIRE(stages.size() == 6);
  for (std::size_t k = 0; k < 6; ++k) {
    INFO("step " << k + 1);
    CHECK(replicas[k].rank_busy_seconds == std::vector<double>{0.010, 0.040});
    CHECK(replicas[k].busy_reference_seconds == std::vector<double>{0.040, 0.010});
    CHECK(replicas[k].stragglers == (k + 1 == 5 ? std::vector<int>{1} : std::vector<int>{}));
    CHECK(stages[k].rank_busy_seconds == std::vector<double>{0.010, 0.040});
    CHECK(stages[k].busy_reference_seconds == std::vector<double>{0, 0});
    CHECK(stages[k].stragglers.empty());
  }
  REQUIRE(setenv("LOOM_TEST_BUSY_MS", "10,x", 1) == 0);
  CHECK_THROWS_WITH(comm::test_busy_seconds(), Catch::Contains("LOOM_TEST_BUSY_MS") && Catch::Contains("'10,x'"));
  REQUIRE(unsetenv("LOOM_TEST_BUSY_MS") == 0);
}
