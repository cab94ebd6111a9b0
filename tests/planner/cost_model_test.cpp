// Hand-worked cases of the cost model (cost_model.h): the numbers below are computed on paper.
#include <catch2/catch.hpp>

#include <loom/planner/cost_model.h>
#include <loom/planner/placement.h>

#include "instances.h"

using namespace loom::planner;
using namespace loom::planner::test;

namespace {

Plan make_plan(int global_batch, int microbatches, std::vector<StagePlan> stages,
               ScheduleKind kind = ScheduleKind::dapple) {
  Plan p;
  p.global_batch = global_batch;
  p.microbatches = microbatches;
  p.schedule = kind;
  p.stages = std::move(stages);
  return p;
}

}  // namespace

TEST_CASE("pivot: the middle stage dominates, T_end is the backward drain from it") {
  // Per sample: stage costs (F, B) = (1, 2), (3, 6), (1, 1); no activations cross; M = 4, b = 1.
  // LB: s0 = 4·3 = 12, s1 = 1 + 4·9 + 2 = 39, s2 = 4 + 4·2 + 8 = 20  →  pivot s1, L = 39.
  const Profile p = make_profile({{1, 2, 0, 0, 0}, {3, 6, 0, 0, 0}, {1, 1, 0, 0, 0}});
  const Cluster c = make_cluster(1, 3, 1e9, 1e9, 1e12);
  const PlanCost cost = evaluate(p, c, make_plan(4, 4, {{0, 0, {0}}, {1, 1, {1}}, {2, 2, {2}}}));
  CHECK(cost.pivot == 2);  // element 2 = stage 1
  CHECK(cost.step_ms == Approx(39));
  CHECK(cost.warmup_ms == Approx(4));   // F0 + F1
  CHECK(cost.steady_ms == Approx(27));  // 3 · (3 + 6)
  CHECK(cost.end_ms == Approx(8));      // B1 + B0
}

TEST_CASE("pivot: on a tie the later stage is the pivot; balanced stages give 2(M + S − 1)") {
  // (F, B) = (2, 2) and (1, 1), M = 2: LB s0 = 8, LB s1 = 2 + 4 + 2 = 8.
  const std::vector<Element> tie = {{2, 2, 0}, {0, 0, 0}, {1, 1, 0}};
  const PipelineLatency l = dapple_latency(tie, 2);
  CHECK(l.pivot == 2);
  CHECK(l.step_ms == Approx(8));
  // S = 4 balanced stages with F = B = 1 and free transfers: (M + S − 1)(F + B) = 2 · 11.
  std::vector<Element> balanced;
  for (int s = 0; s < 4; ++s) {
    if (s > 0) balanced.push_back({0, 0, 0});
    balanced.push_back({1, 1, 0});
  }
  CHECK(dapple_latency(balanced, 8).step_ms == Approx(22));
  CHECK(dapple_latency(balanced, 8).pivot == 6);
}

TEST_CASE("allreduce: hidden behind the later backwards, or not") {
  // 1x4 node, 1 GB/s links: a 2-replica allreduce of W bytes takes W / 1e6 ms.
  // Stages (F, B) = (1, 2) per replica (2 samples per micro-batch, 1 per replica), M = 2.
  // LB: s0 = 6, s1 = 1 + 6 + 2 = 9 → pivot s1. Stage 1 ends its last backward 2 ms (B0) early.
  const Cluster c = make_cluster(1, 4, 1e9, 1e9, 1e12);
  auto run = [&](double w0, double w1) {
    const Profile p = make_profile({{1, 2, 0, 0, w0}, {1, 2, 0, 0, w1}});
    return evaluate(p, c, make_plan(4, 2, {{0, 0, {0, 1}}, {1, 1, {2, 3}}}));
  };
  const PlanCost hidden = run(0, 2e6);  // AR1 = 2 ms ≤ B0 = 2 ms: fully hidden
  CHECK(hidden.stages[1].allreduce_ms == Approx(2));
  CHECK(hidden.stages[1].allreduce_tail_ms == Approx(0).margin(1e-12));
  CHECK(hidden.step_ms == Approx(9));
  const PlanCost exposed = run(0, 5e6);  // AR1 = 5 ms: 3 ms stick out
  CHECK(exposed.stages[1].allreduce_tail_ms == Approx(3));
  CHECK(exposed.step_ms == Approx(12));
  CHECK(exposed.end_ms == Approx(12 - 2 - 3));  // T_warmup = F0 + F1 = 2, T_steady = 1 · 3
  const PlanCost first = run(1e6, 2e6);  // stage 0's allreduce has nothing to hide behind
  CHECK(first.stages[0].allreduce_tail_ms == Approx(1));
  CHECK(first.step_ms == Approx(10));
}

TEST_CASE("allreduce cost is hierarchical: inside nodes, then across them") {
  const Cluster c = make_cluster(2, 4, 100e9, 1e9, 1e12);
  // 8 replicas on 2 nodes: 2·3/4 · W / 100e9 + 2·1/2 · W / 1e9 seconds.
  const double w = 1e9;
  CHECK(allreduce_ms(c, {0, 1, 2, 3, 4, 5, 6, 7}, w) == Approx((1.5 * w / 100e9 + w / 1e9) * 1e3));
  CHECK(allreduce_ms(c, {0, 1}, w) == Approx(w / 100e9 * 1e3));  // one node
  CHECK(allreduce_ms(c, {0, 4}, w) == Approx(w / 1e9 * 1e3));    // one replica per node: network only
  CHECK(allreduce_ms(c, {3}, w) == 0);
}

TEST_CASE("boundary transfer: across nodes it goes through the network interface") {
  // 1e6 bytes per sample cross the cut; b = 2 samples per micro-batch → 2e6 bytes.
  const Profile p = make_profile({{1, 1, 1e6, 1e6, 0}, {1, 1, 1e6, 0, 0}});
  const Cluster c = make_cluster(2, 2, 100e9, 1e9, 1e12);
  auto transfer = [&](std::vector<int> a, std::vector<int> b) {
    return evaluate(p, c, make_plan(4, 2, {{0, 0, a}, {1, 1, b}})).stages[0].transfer_ms;
  };
  CHECK(transfer({0}, {1}) == Approx(2e6 / 100e9 * 1e3));  // same node: NVLink
  CHECK(transfer({0}, {2}) == Approx(2e6 / 1e9 * 1e3));    // other node: 2 ms on the network
  CHECK(transfer({0, 1}, {2, 3}) == Approx(2.0));          // both rows share node 0's interface
  CHECK(transfer({0, 2}, {1, 3}) == Approx(1e6 / 100e9 * 1e3));  // each row stays in its node
  CHECK(transfer({0}, {1, 2}) == Approx(1.0));             // one row over NVLink, one over the network

  // The whole step with the cross-node transfer as an element of its own:
  // F = B = 2 per stage (2 samples), T = 2 each way, M = 2:
  // LB: s0 = 2·4 = 8, t = 2 + 2·4 + 2 = 12, s1 = 4 + 8 + 4 = 16 → L = 16.
  const PlanCost cost = evaluate(p, c, make_plan(4, 2, {{0, 0, {0}}, {1, 1, {2}}}));
  CHECK(cost.pivot == 2);
  CHECK(cost.step_ms == Approx(16));
  const Profile heavy = make_profile({{1, 1, 4e6, 4e6, 0}, {1, 1, 4e6, 0, 0}});  // T = 8 ms
  // LB: s0 = 8, t = 2 + 2·16 + 2 = 36, s1 = 10 + 8 + 10 = 28 → the transfer is the pivot.
  const PlanCost slow = evaluate(heavy, c, make_plan(4, 2, {{0, 0, {0}}, {1, 1, {2}}}));
  CHECK(slow.pivot == 1);
  CHECK(slow.step_ms == Approx(36));
}

TEST_CASE("memory: weights, gradients, optimizer state, and the activations in flight") {
  // Activations 1e6 per sample per layer, input boundary 5e5 per sample; b = 4, one replica.
  const Profile p = make_profile({{1, 1, 1e6, 5e5, 1e8}, {1, 1, 1e6, 5e5, 2e8}, {1, 1, 1e6, 0, 3e8}});
  const Cluster c = make_cluster(1, 3, 1e9, 1e9, 2e9);
  const Plan dapple = make_plan(32, 8, {{0, 0, {0}}, {1, 1, {1}}, {2, 2, {2}}});
  const PlanCost d = evaluate(p, c, dapple);
  CHECK(d.stages[0].in_flight == 3);  // min(S − s, M)
  CHECK(d.stages[2].in_flight == 1);
  CHECK(d.stages[0].memory_bytes == Approx(4 * 1e8 + 3 * 4e6));
  CHECK(d.stages[1].memory_bytes == Approx(4 * 2e8 + 2 * (4e6 + 2e6)));  // + the received input
  CHECK(d.peak_memory_bytes == Approx(4 * 3e8 + 1 * 6e6));
  CHECK(d.feasible);
  Plan gpipe = dapple;
  gpipe.schedule = ScheduleKind::gpipe;
  const PlanCost g = evaluate(p, c, gpipe);
  CHECK(g.stages[0].in_flight == 8);
  CHECK(g.stages[2].memory_bytes == Approx(4 * 3e8 + 8 * 6e6));
  CHECK(evaluate(p, c, dapple, CostOptions{0}).stages[2].memory_bytes == Approx(2 * 3e8 + 6e6));
  const Cluster small = make_cluster(1, 3, 1e9, 1e9, 1e9);
  const PlanCost tight = evaluate(p, small, dapple);
  CHECK_FALSE(tight.feasible);
  CHECK_THAT(tight.infeasible_reason, Catch::Contains("stage 2"));
}

TEST_CASE("GPipe: two flow shops, forwards then backwards") {
  // (F, B) = (1, 2) and (3, 1), free transfers, M = 3: (1 + 3 + 2·3) + (2 + 1 + 2·2) = 17.
  const Profile p = make_profile({{1, 2, 0, 0, 0}, {3, 1, 0, 0, 0}});
  const Cluster c = make_cluster(1, 2, 1e9, 1e9, 1e12);
  CHECK(evaluate(p, c, make_plan(3, 3, {{0, 0, {0}}, {1, 1, {1}}}, ScheduleKind::gpipe)).step_ms == Approx(17));
}

TEST_CASE("data parallelism with the allreduce overlapped with the last backward, bucket by bucket") {
  // One stage on 2 devices of a node at 2^23 bytes per ms: AR(W) = W / 8 MiB ms. Backward of the last
  // micro-batch: layer 1 (1 ms, 24 MiB) then layer 0 (2 ms, 8 MiB): two buckets (24 + 8 > 25 MiB).
  // Overlapped: layer 1's bucket runs 1..4, layer 0's 4..5; the backward ends at 3 → 2 ms tail.
  constexpr double kMiB = 1 << 20;
  const Profile p = make_profile({{1, 2, 0, 0, 8 * kMiB}, {1, 1, 0, 0, 24 * kMiB}});
  const Cluster c = make_cluster(1, 2, 8 * kMiB * 1e3, 8 * kMiB * 1e3, 1e12);
  Plan plan = make_plan(2, 1, {{0, 1, {0, 1}}});
  const PlanCost plain = evaluate(p, c, plan);
  CHECK(plain.step_ms == Approx(2 + 3 + 4));
  plan.overlap_allreduce = true;
  const PlanCost overlapped = evaluate(p, c, plan);
  CHECK(overlapped.stages[0].allreduce_ms == Approx(2));
  CHECK(overlapped.step_ms == Approx(2 + 3 + 2));
  // Layers of 1 and 3 MiB share one bucket, which waits for the whole backward: nothing overlaps.
  const Profile small = make_profile({{1, 2, 0, 0, 1 * kMiB}, {1, 1, 0, 0, 3 * kMiB}});
  CHECK(evaluate(small, c, plan).stages[0].allreduce_ms == Approx(0.5));
  const LinearCost ar = allreduce_cost(c, {0, 1});
  CHECK(bucketed_allreduce_ms(small, 0, 1, 1, ar, true) == Approx(0.5));
  CHECK(bucketed_allreduce_ms(p, 0, 1, 1, ar, false) == Approx(4));
  CHECK(bucketed_allreduce_ms(p, 1, 1, 1, ar, true) == Approx(3));  // starts at 1, ends at 4
}

TEST_CASE("placement policies") {
  // 2 nodes x 4 devices, stages of 3, 2 and 2 replicas.
  const std::vector<int> replicas = {3, 2, 2};
  const auto fresh = place_stages(2, 4, replicas, PlacementPolicy::FreshFirst);
  CHECK(fresh[0] == std::vector<int>{0, 1, 2});
  CHECK(fresh[1] == std::vector<int>{4, 5});     // an untouched node
  CHECK(fresh[2] == std::vector<int>{6, 7});     // no fresh node left: the one with most free
  const auto append = place_stages(2, 4, replicas, PlacementPolicy::AppendFirst);
  CHECK(append[0] == std::vector<int>{0, 1, 2});
  CHECK(append[1] == std::vector<int>{3, 4});    // fill node 0, then node 1
  CHECK(append[2] == std::vector<int>{5, 6});
  const auto scatter = place_stages(2, 4, replicas, PlacementPolicy::ScatterFirst);
  CHECK(scatter[0] == std::vector<int>{0, 1, 4});
  CHECK(scatter[1] == std::vector<int>{2, 5});
  CHECK(scatter[2] == std::vector<int>{3, 6});
  CHECK_THROWS(place_stages(2, 4, {5, 4}, PlacementPolicy::FreshFirst));
}

TEST_CASE("round trip: with K_0 = 2 < M a slow boundary caps the first stage's loop") {
  // Two stages on two nodes, F = B = 1 each (1 sample per micro-batch), the boundary takes 1 ms
  // each way, M = 8. Stage 0 keeps at most K_0 = 2 micro-batches in flight, each for
  // RT_0 = 2 + 2·1 + 2 = 6 ms, so LR_0 = 6 · (1 + 7/2) = 27, above LB_s1 = 4 + 8·2 = 20.
  const Profile p = make_profile({{1, 1, 1e6, 1e6, 0}, {1, 1, 1e6, 0, 0}});
  const Cluster c = make_cluster(2, 1, 100e9, 1e9, 1e12);
  Plan plan;
  plan.global_batch = 8;
  plan.microbatches = 8;
  plan.stages = {{0, 0, {0}}, {1, 1, {1}}};
  const PlanCost cost = evaluate(p, c, plan);
  CHECK(cost.stages[0].transfer_ms == Approx(1));
  CHECK(cost.pivot == 0);
  CHECK(cost.pivot_is_round_trip);
  CHECK(cost.step_ms == Approx(27));
  CHECK(cost.warmup_ms == Approx(1 + 1 + 1));  // the first micro-batch's forward to the end
  CHECK(cost.steady_ms == Approx(7 * 3));      // (M − 1) · RT_0 / K_0
  // With all micro-batches in flight there is no loop: M = 2 gives K_0 = M.
  plan.microbatches = 2;
  CHECK_FALSE(evaluate(p, c, plan).pivot_is_round_trip);
}

// Issue 29: the reduce-scatter's receive window a replicated chunk keeps (comm/mpi_ring.cpp): up to 4
// segments of 1 MiB, as many as the part a step receives needs.
TEST_CASE("the allreduce's receive window: halving, ring, and across nodes") {
  constexpr double MiB = 1 << 20;
  const Cluster one_node = make_cluster(1, 4, 1e9, 1e9, 1e12);
  CHECK(communicator_scratch_bytes(one_node, {0}, 10 * MiB) == 0);  // not replicated
  // Two replicas halve: a step receives half of the 3 MB bucket, 1.5 MB: two segments.
  CHECK(communicator_scratch_bytes(one_node, {0, 1}, 3e6) == 2 * MiB);
  CHECK(communicator_scratch_bytes(one_node, {0, 1}, 1e3) == 1 * MiB);
  // Three replicas run a ring: a third of a bucket, which holds at most 25 MiB (8.3 MiB: capped at 4).
  CHECK(communicator_scratch_bytes(one_node, {0, 1, 2}, 30 * MiB) == 4 * MiB);
  CHECK(communicator_scratch_bytes(one_node, {0, 1, 2}, 6 * MiB) == 2 * MiB);
  // Two nodes of two: the node's pair halves 8 MiB (4 segments), then the two nodes halve its 4 MiB share (2).
  const Cluster two_nodes = make_cluster(2, 2, 1e9, 1e9, 1e12);
  CHECK(communicator_scratch_bytes(two_nodes, {0, 1, 2, 3}, 8 * MiB) == 6 * MiB);
}

// ZeRO-1's windows (runtime/zero_shard.h, comm/mpi_ring.cpp), as a gpt --size cpu stage of two chunks on
// two replicas measured them: chunks of 1.75 and 1.6 MB, owners [0, 1.675) and [1.675, 3.35) MB. Replica 0
// receives 1.675 MB of chunk 0 (2 segments of 1 MiB) and nothing of chunk 1; replica 1 75 kB of chunk 0
// (1 segment) and 1.6 MB of chunk 1 (2): 3 MiB at most. The all-gather's window is the stage's
// parameters, up to 2^22 of them.
TEST_CASE("ZeRO-1: the reduce-scatter's receive windows and the all-gather's window") {
  constexpr double kMiB = 1 << 20;
  CHECK(zero_scratch_bytes({1.75e6, 1.6e6}, 2) == Approx(3 * kMiB));
  CHECK(zero_scratch_bytes({1.75e6, 1.6e6}, 1) == 0);
  CHECK(zero_scratch_bytes({12e6}, 3) == Approx(4 * kMiB));  // parts of 4 MB: 4 segments, the most
  CHECK(zero_scratch_bytes({3e6}, 3) == Approx(kMiB));
  CHECK(zero_gather_bytes(3.35e6) == Approx(3.35e6));
  CHECK(zero_gather_bytes(1e9) == Approx(16 * kMiB));
}
