// A given partition under any synchronous kind (issue 28): the simulator with each chunk's own
// costs, hand-worked on ZB-V with chunks of different sizes (with and without a slow link), the
// memory of each stage, a plan scored as its partition (plan_score.h), and the errors.
#include <catch2/catch.hpp>

#include <loom/planner/partition_evaluation.h>
#include <loom/planner/plan_score.h>

#include "instances.h"

using namespace loom::planner;
using namespace loom::planner::test;
using loom::schedule::ScheduleKind;

namespace {

// Four layers, F = 1, 2, 3, 4 and B = 2F per sample; activations 10..40 bytes, parameters 1..4 kB.
Profile four_layers(double boundary_bytes) {
  return make_profile({{1, 2, 10, boundary_bytes, 1e3},
                       {2, 4, 20, boundary_bytes, 2e3},
                       {3, 6, 30, 2 * boundary_bytes, 3e3},
                       {4, 8, 40, 0, 4e3}});
}

Partition zb_v_partition() {
  Partition p;
  p.kind = ScheduleKind::zb_v;
  p.chunks = 2;
  p.microbatches = 1;
  p.global_batch = 1;
  p.layers = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
  return p;
}

}  // namespace

TEST_CASE("partition: ZB-V with uneven chunks, timed by each chunk's own costs") {
  // Stage 0 holds layers 0 and 3 (virtual stages 0 and 3), stage 1 layers 1 and 2. One micro-batch,
  // BI = BW = B/2: s0 F0c0 [0,1]; s1 F0c0 [1,3], F0c1 [3,6]; s0 F0c1 [6,10], BI0c1 [10,14], BW0c1
  // [14,18]; s1 BI0c1 [14,17], BW0c1 [17,20], BI0c0 [20,22], BW0c0 [22,24]; s0 BI0c0 [22,23], BW0c0
  // [23,24]. Averaged chunks (2.5 and 2.5 per forward) would time it differently.
  const Cluster cluster = make_cluster(2, 1, 1e9, 1e9, 1e12);
  const PartitionEvaluation e = evaluate_partition(four_layers(0), cluster, zb_v_partition());
  CHECK(e.simulation.step_ms == Approx(24));
  CHECK(e.simulation.bubble_fraction == Approx(1 - 30.0 / 48));
  REQUIRE(e.stages.size() == 2);
  // Adam: parameters, gradients and 2 states per parameter byte; activations of both chunks at once.
  CHECK(e.stages[0].static_bytes == Approx((1e3 + 4e3) * 4));
  CHECK(e.stages[1].static_bytes == Approx((2e3 + 3e3) * 4));
  CHECK(e.stages[0].activation_bytes == Approx(10 + 40));
  CHECK(e.stages[1].activation_bytes == Approx(20 + 30));
  CHECK(e.peak_bytes == Approx(2e4 + 50));
  CHECK(e.fits);
  CHECK(e.stages[0].devices == std::vector<int>{0});
  CHECK(e.stages[1].devices == std::vector<int>{1});
}

TEST_CASE("partition: a slow link carries each chunk's own output") {
  // 1 kB/s between the two nodes: layer 0's output (1 byte) takes 1 ms, layer 2's (2 bytes) 2 ms, and
  // their gradients the same back: s0 F0c0 [0,1] -> 2; s1 F0c0 [2,4], F0c1 [4,7] -> 9; s0 F0c1
  // [9,13], BI0c1 [13,17] -> 19, BW0c1 [17,21]; s1 BI0c1 [19,22], BW0c1 [22,25], BI0c0 [25,27] -> 28,
  // BW0c0 [27,29]; s0 BI0c0 [28,29], BW0c0 [29,30].
  const Cluster cluster = make_cluster(2, 1, 1e9, 1e3, 1e12);
  const PartitionEvaluation e = evaluate_partition(four_layers(1), cluster, zb_v_partition());
  CHECK(e.simulation.step_ms == Approx(30));
  // Stage 1's chunks keep their received inputs too: layer 0's output (1 byte) for layer 1, layer 1's (1
  // byte) for layer 2; and while its first BI runs, layer 2's output gradient from stage 0 (2 bytes).
  CHECK(e.stages[1].activation_bytes == Approx(20 + 1 + 30 + 1 + 2));
}

TEST_CASE("partition: a plan is scored as its partition (plan_score.h)") {
  const Profile profile = make_profile({{1, 2, 1e3, 1e3, 1e5}, {2, 3, 1e3, 1e3, 2e5}, {1, 1, 1e3, 0, 1e5}});
  const Cluster cluster = make_cluster(1, 4, 1e9, 1e9, 1e12);
  Partition p;
  p.kind = ScheduleKind::dapple;
  p.microbatches = 4;
  p.global_batch = 8;
  p.layers = {{0, 1}, {2, 2}};
  p.replicas = {1, 2};
  p.devices = {{3}, {0, 2}};
  const PartitionEvaluation e = evaluate_partition(profile, cluster, p);
  Plan plan;
  plan.global_batch = 8;
  plan.microbatches = 4;
  plan.schedule = ScheduleKind::dapple;
  plan.stages = {StagePlan{0, 1, {3}}, StagePlan{2, 2, {0, 2}}};
  const PartitionEvaluation scored = score_plan(profile, cluster, plan);
  CHECK(scored.simulation.step_ms == e.simulation.step_ms);
  for (std::size_t s = 0; s < 2; ++s) {
    CHECK(scored.stages[s].peak_bytes == e.stages[s].peak_bytes);
    CHECK(scored.stages[s].devices == e.stages[s].devices);
  }
  record_score(plan, scored);
  CHECK(plan.predicted_step_ms == e.simulation.step_ms);
  CHECK(plan.stages[1].predicted_peak_bytes == e.stages[1].peak_bytes);
  // The plan's own allreduce assumption, whatever the options say; ZeRO-1 from either.
  CostOptions overlap;
  overlap.overlap_allreduce = true;
  CHECK(score_plan(profile, cluster, plan, overlap).simulation.step_ms == e.simulation.step_ms);
  plan.overlap_allreduce = true;
  CHECK(score_plan(profile, cluster, plan).simulation.step_ms == evaluate_partition(profile, cluster, p, overlap).simulation.step_ms);
  plan.zero = 1;
  CostOptions zero;
  zero.zero = true;
  zero.overlap_allreduce = true;
  CHECK(score_plan(profile, cluster, plan).stages[1].static_bytes ==
        evaluate_partition(profile, cluster, p, zero).stages[1].static_bytes);
}

TEST_CASE("partition: a multi-chunk plan and its partition convert both ways") {
  Plan plan;
  plan.model = "m";
  plan.planner = "joint";
  plan.global_batch = 8;
  plan.microbatches = 4;
  plan.schedule = ScheduleKind::zb_v;
  plan.chunks = 2;
  plan.zero = 1;
  plan.stages = {StagePlan{0, 0, {1}, {{3, 3}}, {3}}, StagePlan{1, 1, {0}, {{2, 2}}, {}}};
  const Partition p = plan_partition(plan);
  CHECK(p.layers == std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {2, 2}, {3, 3}});
  CHECK(p.devices == std::vector<std::vector<int>>{{1}, {0}});
  CHECK(p.recompute == std::vector<std::vector<int>>{{3}, {}});
  CHECK(p.zero);
  const PartitionEvaluation e = evaluate_partition(four_layers(0), make_cluster(2, 1, 1e9, 1e9, 1e12), p);
  Plan back = partition_plan(p, e, "m", "joint");
  CHECK(back.stages == std::vector<StagePlan>{StagePlan{0, 0, {1}, {{3, 3}}, {3}, e.stages[0].peak_bytes},
                                              StagePlan{1, 1, {0}, {{2, 2}}, {}, e.stages[1].peak_bytes}});
  CHECK(back.zero == 1);
  CHECK(back.predicted_step_ms == e.simulation.step_ms);
}

TEST_CASE("partition: a stage over its device's memory is named") {
  const Cluster small = make_cluster(2, 1, 1e9, 1e9, 2e4);
  const PartitionEvaluation e = evaluate_partition(four_layers(0), small, zb_v_partition());
  CHECK_FALSE(e.fits);
  CHECK_THAT(e.why_not, Catch::StartsWith("stage 0 needs 20050 bytes per device, 50 more than the 20000 available"));
}

TEST_CASE("partition: what is not a partition is refused in one line") {
  const Profile profile = four_layers(0);
  const Cluster cluster = make_cluster(2, 1, 1e9, 1e9, 1e12);
  Partition p = zb_v_partition();
  p.layers = {{0, 0}, {2, 2}, {3, 3}, {1, 1}};
  CHECK_THROWS_WITH(evaluate_partition(profile, cluster, p), Catch::Contains("virtual stage 1 holds layers 2-2, but it must start at layer 1"));
  p = zb_v_partition();
  p.layers.pop_back();
  CHECK_THROWS_WITH(evaluate_partition(profile, cluster, p), Catch::Contains("3 layer ranges are not whole stages of 2 chunks"));
  p = zb_v_partition();
  p.chunks = 1;
  CHECK_THROWS_WITH(evaluate_partition(profile, cluster, p), Catch::Contains("4 devices, but the cluster has 2"));
  p.layers = {{0, 1}, {2, 3}};
  CHECK_THROWS_WITH(evaluate_partition(profile, cluster, p),
                    Catch::Contains("schedule 'zb-v' holds 2 chunk(s) per stage, but the partition has 1"));
  p = zb_v_partition();
  p.kind = ScheduleKind::pipedream;
  CHECK_THROWS_WITH(evaluate_partition(profile, cluster, p), Catch::Contains("'pipedream' is asynchronous"));
  p = zb_v_partition();
  p.microbatches = 3;
  p.global_batch = 8;
  CHECK_THROWS_WITH(evaluate_partition(profile, cluster, p), Catch::Contains("3 micro-batches do not divide the global batch of 8"));
  CHECK(parse_layer_ranges("0-3,4-4", "--partition") == std::vector<std::pair<int, int>>{{0, 3}, {4, 4}});
  CHECK_THROWS_WITH(parse_layer_ranges("0-3,5", "--partition"), Catch::StartsWith("--partition: '5' is not a layer range"));
  CHECK_THROWS_WITH(parse_layer_ranges("3-1", "--partition"), Catch::StartsWith("--partition: '3-1' is not a layer range"));
}

// Issue 29: recomputation and ZeRO-1 in the model, worked by hand. One stage holds layers 0-3
// (F = 1..4, B = 2F, activations 10..40, boundaries 5, 5, 10), GPipe with 2 micro-batches of one
// sample. Recomputing layer 2 keeps, per micro-batch, 100 - 30 + 5 (layer 1's output, the run's
// input); the micro-batch being backwarded holds layer 2's 30 once more: 2 x 75 + 30 = 180, not 200.
// Each backward gains layer 2's forward: 2 x 10 + 2 x (20 + 3) = 66 ms.
TEST_CASE("partition: recomputation keeps the runs' inputs and one working set, and adds the forwards") {
  const Cluster cluster = make_cluster(1, 1, 1e9, 1e9, 1e12);
  Partition p{ScheduleKind::gpipe, 1, 2, 2, {{0, 3}}, {}, {}};
  const PartitionEvaluation kept = evaluate_partition(four_layers(5), cluster, p);
  CHECK(kept.stages[0].activation_bytes == Approx(200));
  CHECK(kept.simulation.step_ms == Approx(60));
  p.recompute = {{2}};
  const PartitionEvaluation again = evaluate_partition(four_layers(5), cluster, p);
  CHECK(again.stages[0].activation_bytes == Approx(180));
  CHECK(again.simulation.step_ms == Approx(66));
  p.recompute = {{0, 1}};  // a prefix keeps no extra input: 2 x 70 + 30
  CHECK(evaluate_partition(four_layers(5), cluster, p).stages[0].activation_bytes == Approx(170));
  // Where layer 3 keeps 20 of layer 2's 30 bytes (its input), recomputing layer 2 saves 10 and keeps the
  // run's input 5: 2 x 95, and 10 held again in the backward: 200, no better than keeping it.
  Profile shared = four_layers(5);
  shared.layers[2].cost.next_kept_bytes = 20;
  p.recompute = {{2}};
  CHECK(evaluate_partition(shared, cluster, p).stages[0].activation_bytes == Approx(200));
  p.recompute = {{2, 3}};  // layer 3 recomputed too: its context no longer holds layer 2's output (2 x 35 + 70)
  CHECK(evaluate_partition(shared, cluster, p).stages[0].activation_bytes == Approx(140));
  p.recompute = {{4}};
  CHECK_THROWS_WITH(evaluate_partition(four_layers(5), cluster, p),
                    Catch::Contains("stage 0 recomputes layer 4, which it does not hold"));
  p.recompute = {{2, 1}};
  CHECK_THROWS_WITH(evaluate_partition(four_layers(5), cluster, p), Catch::Contains("recomputes layer 1 after 2"));
}

// Under a split backward the recomputed activations live from BI to BW (StageRunner clears the contexts after
// BW). ZB-H1 on 2 stages and 2 micro-batches; stage 1 (layers 2-3, input 5 bytes) runs F0 BI0 F1 BI1 BW0 BW1
// and recomputes layer 3: it keeps 5 + 30 + 10 (the run's input, layer 2's output) = 45 per micro-batch, and
// each BI brings layer 3's 40 back until its BW: F0 45, BI0 85, F1 130, BI1 170 (one working set on top of
// 2 x 45 would say 130).
TEST_CASE("partition: a split backward holds the recomputed activations until its BW") {
  const Cluster cluster = make_cluster(1, 2, 1e9, 1e9, 1e12);
  Partition p{ScheduleKind::zb_h1, 1, 2, 2, {{0, 1}, {2, 3}}, {}, {}};
  CHECK(evaluate_partition(four_layers(5), cluster, p).stages[1].activation_bytes == Approx(2 * 75));
  p.recompute = {{}, {3}};
  CHECK(evaluate_partition(four_layers(5), cluster, p).stages[1].activation_bytes == Approx(170));
}

// Two replicas also hold the gradient buckets' flat copy of the gradients (10e3 more each) and the
// reduce-scatter's window: one segment of 1 MiB for the 5e3 bytes a step receives.
TEST_CASE("partition: under ZeRO-1 each replica keeps 1/R of its stage's optimizer state") {
  const Cluster cluster = make_cluster(1, 2, 1e9, 1e9, 1e12);
  const Partition p{ScheduleKind::dapple, 1, 2, 4, {{0, 3}}, {2}, {}};
  CostOptions options;  // Adam: 2 states per parameter byte
  CHECK(evaluate_partition(four_layers(5), cluster, p, options).stages[0].static_bytes == Approx(10e3 * 5 + (1 << 20)));
  options.zero = true;
  CHECK(evaluate_partition(four_layers(5), cluster, p, options).stages[0].static_bytes == Approx(10e3 * 4 + (1 << 20)));
}

// Layers 0 and 3 share 1 kB of parameters: on one stage the copy adds its gradient only (4e3 of
// value, gradient and Adam state less 1e3 x 3); split over two stages each holds it whole.
TEST_CASE("partition: a tie with both layers on one stage is held once, across stages on each") {
  Profile profile = four_layers(5);
  profile.ties.push_back({0, 3, 1e3});
  const Cluster cluster = make_cluster(1, 2, 1e9, 1e9, 1e12);
  const Partition one{ScheduleKind::dapple, 1, 2, 2, {{0, 3}}, {}, {}};
  CHECK(evaluate_partition(profile, cluster, one).stages[0].static_bytes == Approx(10e3 * 4 - 1e3 * 3));
  const Partition two{ScheduleKind::dapple, 1, 2, 2, {{0, 1}, {2, 3}}, {}, {}};
  const PartitionEvaluation split = evaluate_partition(profile, cluster, two);
  CHECK(split.stages[0].static_bytes == Approx(3e3 * 4));
  CHECK(split.stages[1].static_bytes == Approx(7e3 * 4));
  Partition v = zb_v_partition();  // stage 0 holds layers 0 and 3 in its two chunks
  CHECK(evaluate_partition(profile, make_cluster(2, 1, 1e9, 1e9, 1e12), v).stages[0].static_bytes ==
        Approx(5e3 * 4 - 1e3 * 3));
}

// The tie group's allreduce (1 kB shared by layers 0 and 3): on one stage there is none; split over
// two stages of one device each, both stages wait for a 2-device allreduce of 1 kB after their
// own (none: one replica each), so the step grows by exactly that allreduce's time.
TEST_CASE("partition: a tie across stages adds its group's allreduce to both stages") {
  Profile profile = four_layers(5);
  const Cluster cluster = make_cluster(1, 2, 1e6, 1e6, 1e12);  // 1 MB/s: 1 kB takes milliseconds
  const Partition two{ScheduleKind::dapple, 1, 2, 2, {{0, 1}, {2, 3}}, {}, {}};
  const double untied = evaluate_partition(profile, cluster, two).simulation.step_ms;
  profile.ties.push_back({0, 3, 1e3});
  const double tied = evaluate_partition(profile, cluster, two).simulation.step_ms;
  const double group = allreduce_cost(cluster, {0, 1}).at(1e3);
  CHECK(group > 0.5);
  CHECK(tied - untied == Approx(group));
  const Partition one{ScheduleKind::dapple, 1, 2, 2, {{0, 3}}, {}, {}};
  Profile untied_one = four_layers(5);
  CHECK(evaluate_partition(profile, cluster, one).simulation.step_ms ==
        Approx(evaluate_partition(untied_one, cluster, one).simulation.step_ms));
}

// The allreduce overlapped with the last backward (CostOptions::overlap_allreduce), in the runtime's
// 25 MiB gradient buckets: one stage of two replicas over all four layers. Layers of 8, 16, 24 and 32
// MiB make the buckets {3}, {2}, {1, 0} (from the last layer back, each closing before it would pass
// 25 MiB); on a fast link each bucket's allreduce ends before the next layer's backward does, so only
// the last bucket's is left after the backward. Four layers of a few kB are one bucket: nothing hides.
TEST_CASE("partition: an overlapped allreduce leaves only the last bucket's after the backward") {
  constexpr double kMiB = 1 << 20;
  const Profile profile = make_profile({{1, 2, 10, 5, 8 * kMiB},
                                        {2, 4, 20, 5, 16 * kMiB},
                                        {3, 6, 30, 10, 24 * kMiB},
                                        {4, 8, 40, 0, 32 * kMiB}});
  const Cluster cluster = make_cluster(1, 2, 1e12, 1e12, 1e12);
  const Partition dp{ScheduleKind::dapple, 1, 1, 2, {{0, 3}}, {2}, {}};
  CostOptions overlapped;
  overlapped.overlap_allreduce = true;
  const double after = evaluate_partition(profile, cluster, dp).simulation.step_ms;
  const double during = evaluate_partition(profile, cluster, dp, overlapped).simulation.step_ms;
  const LinearCost ar = allreduce_cost(cluster, {0, 1});
  CHECK(ar.at(32 * kMiB) < 2);  // each allreduce shorter than the backward of the layer before it
  CHECK(after - during == Approx(ar.at(32 * kMiB) + ar.at(24 * kMiB)));
  const Profile small = four_layers(5);
  CHECK(evaluate_partition(small, cluster, dp).simulation.step_ms ==
        Approx(evaluate_partition(small, cluster, dp, overlapped).simulation.step_ms));
}
