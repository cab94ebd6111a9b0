// The cost model every planner is scored by: the latency of one synchronous training step.
//
// The pipeline is a sequence of elements: stage 0, the boundary transfer 0→1, stage 1, ..., each
// with a per-micro-batch forward time F_e and backward time B_e (a transfer moves the activations
// forward and their gradients back, F = B = its transfer time); w_e = F_e + B_e. For the DAPPLE
// schedule (1F1B, early backward, K_s = min(S − s, M) warm-up forwards on stage s):
//   * element Q keeps the step at least as long as
//         LB_Q = Σ_{e<Q} w_e + M·w_Q          (+ the drain, already in Σ_{e<Q} w_e)
//     (the first micro-batch reaches Q, Q works through all M micro-batches, the last gradient
//     drains back to stage 0). This is DAPPLE's T_warmup + T_steady + backward drain with
//     T_warmup = Σ_{e≤Q} F_e, T_steady = (M − 1)·w_Q, drain = Σ_{e≤Q} B_e.
//   * stage s holds at most K_s micro-batches between its forward and its backward, and each
//     stays there for the round trip RT_s = Σ_{e≥s} w_e through the rest of the pipeline. When
//     K_s < M this caps its rate at K_s per RT_s: the loop of stage s takes
//         LR_s = Σ_{e<s} w_e + RT_s·(1 + (M − 1)/K_s)
//     (one round trip, then M − 1 micro-batches at RT_s / K_s each). With balanced stages and
//     free transfers LR_s equals LB_last; it dominates when transfers are slow, which is why
//     DAPPLE raises K then.
// The pivot is the term with the largest value (on ties the later element, and at one stage LB). Stage s
// finishes its last backward Σ_{e<s} B_e before the end of the drain; its gradient allreduce AR_s
// starts then, so it stays hidden behind the later backwards while AR_s ≤ Σ_{e<s} B_e:
//     L = max(max_Q LB_Q, max_s LR_s) + max_s (AR_s − Σ_{e<s} B_e)    (the s = 0 term is ≥ 0),
// reported as T_warmup (Σ_{e≤Q} F_e; for a loop pivot, the first forward to the end),
// T_steady ((M − 1)·w_Q or (M − 1)·RT_s/K_s) and T_end = L − T_warmup − T_steady.
// With Plan::overlap_allreduce, each layer's gradients are allreduced as soon as the last backward
// has produced them (one after another, last layer first), and AR_s is what of that still runs
// after the stage's last backward. GPipe (all forwards, then all backwards) is scored as two flow
// shops, Σ F + (M − 1)·max F and Σ B + (M − 1)·max B, plus the same allreduce tail.
//
// Costs: a stage replica computes ceil(b / R) rows of a micro-batch of b = global batch / M
// samples (rows are split evenly, replica i gets rows [i·b/R, (i+1)·b/R)). A boundary transfer
// sends each row from the replica that has it to the replica that needs it; a device's intra-node
// link and a node's network interface each carry their traffic at their bandwidth, in both
// directions at once, and the transfer takes as long as the busiest of them (plus the latency of
// the slowest link used). A stage's allreduce is hierarchical: reduce-scatter inside each node,
// allreduce across nodes over the network interfaces, allgather inside each node:
//     AR = 2(n−1)/n · W / intra  +  2(G−1)/G · W / inter  (+ latencies),
// with n the most replicas on one node and G the number of nodes used.
// Memory per device: parameters, gradients and optimizer state (W · (2 + optimizer_state_factor))
// plus, for each micro-batch in flight, the stage's activations and its received input. In
// flight: min(S − s, M) under DAPPLE (stage s of S), M under GPipe.
#pragma once

#include <string>
#include <vector>

#include <loom/planner/cluster.h>
#include <loom/planner/plan.h>
#include <loom/planner/profile.h>

namespace loom::planner {

struct CostOptions {
  double optimizer_state_factor = 2;  // optimizer state bytes per parameter byte: Adam 2, momentum 1, SGD 0
  // ZeRO-1 (`loom train --zero 1`): each replica of a stage keeps 1/R of its optimizer state. The
  // joint search and evaluate_partition count it (state_bytes); the DAPPLE and PipeDream planners
  // count the whole state on every replica.
  bool zero = false;
  // The gradient allreduce runs bucket by bucket during the last backward (`loom plan --overlap`, as
  // loom's executor does over MPI; BucketedAllreduce): evaluate_partition and the joint search count only the part of
  // it not hidden behind that backward. The DAPPLE and PipeDream planners take it from
  // PlannerOptions::overlap_allreduce.
  bool overlap_allreduce = false;
  // One optimizer step's milliseconds per MB of a stage's parameters (Profile::step_ms_per_mb of the run's
  // optimizer; 0: free). evaluate_partition and the joint search count it as the STEP.
  double step_ms_per_mb = 0;
};

// Weights, gradients and optimizer state of `weight_bytes` of parameters on one of `replicas`, and
// when replicas > 1 the gradient buckets' flat buffers (a copy of the gradients the allreduce or
// reduce-scatter works on: comm/gradient_bucketer.h). The joint search and evaluate_partition use
// it; the DAPPLE and PipeDream planners count weights x (2 + optimizer state).
double state_bytes(double weight_bytes, int replicas, const CostOptions& options);
// The receive window a replicated chunk's allreduce keeps once it has run (comm/mpi_ring.cpp: min(4, ⌈part /
// 1 MiB⌉) segments of 1 MiB, where part is what a reduce-scatter step receives of a bucket: half of it in a
// power-of-two group, which halves recursively, 1/R of it in a ring), for the replicas on one node and,
// across nodes, for one replica per node on the node's share. Buckets hold at most 25 MiB (`loom train
// --bucket-mb`'s default).
double communicator_scratch_bytes(const Cluster& cluster, const std::vector<int>& devices, double weight_bytes);
// Under ZeRO-1 (runtime/zero_shard.h) instead: each chunk's buckets are reduce-scattered over the stage's
// `replicas` (comm/mpi_ring.cpp's ring: step k receives the bucket's part of owner r − k − 2), the owners
// splitting the chunks' parameters, laid end to end in chunk order, evenly. A replica's window for a chunk
// is as above for the largest part of the chunk it receives (a bucket's is no larger); the chunks' groups
// keep one window each. The most any replica keeps, from the chunks' parameter bytes in chunk order.
double zero_scratch_bytes(const std::vector<double>& chunk_weight_bytes, int replicas);
// ZeRO-1's parameter all-gather after the optimizer step (ZeroShard::gather): a window of at most 2^22
// parameters, held while no activations are.
double zero_gather_bytes(double stage_weight_bytes);

// comm::GradientBucketer's default bucket (`loom train --bucket-mb 25`).
inline constexpr double kGradientBucketBytes = 25.0 * (1 << 20);

// One stage of a plan as the closed-form model (evaluate) estimates it.
struct StageEstimate {
  double forward_ms = 0;     // one micro-batch, the replica with the most rows
  double backward_ms = 0;
  double allreduce_ms = 0;   // the stage's gradient allreduce across its replicas
  double allreduce_tail_ms = 0;  // what of it is not hidden (before taking the maximum over stages)
  double transfer_ms = 0;    // boundary transfer to the next stage, per micro-batch and direction
  int in_flight = 0;         // micro-batches whose activations are alive at once
  double memory_bytes = 0;   // peak per device
};

struct PlanCost {
  bool feasible = true;
  std::string infeasible_reason;
  double step_ms = 0;
  // DAPPLE schedule only: the pivot element (2s: stage s, 2s+1: the transfer after stage s), and
  // whether it is the round-trip loop of that stage rather than its work.
  // GPipe: warmup_ms is the forward phase, steady_ms the backward phase, end_ms the allreduce tail.
  int pivot = -1;
  bool pivot_is_round_trip = false;
  double warmup_ms = 0, steady_ms = 0, end_ms = 0;
  double peak_memory_bytes = 0;
  std::vector<StageEstimate> stages;
};

// Scores `plan` (which must be valid for the profile and cluster). Infeasible plans (memory) are
// still timed; `feasible` and `infeasible_reason` say why they cannot run.
PlanCost evaluate(const Profile& profile, const Cluster& cluster, const Plan& plan, const CostOptions& options = {});

// The building blocks, shared with the planners so that they score exactly like evaluate().
// Allreduce of `bytes` among `devices`; a linear function of bytes.
double allreduce_ms(const Cluster& cluster, const std::vector<int>& devices, double bytes);
// Boundary transfer of one micro-batch of `rows` rows and `bytes` bytes from the replicas on
// `from` to those on `to`.
double transfer_ms(const Cluster& cluster, const std::vector<int>& from, const std::vector<int>& to, int rows,
                   double bytes);
// With time = bytes · slope + latency (and 0 for 0 bytes), the slope and latency of those two.
struct LinearCost {
  double ms_per_byte = 0;
  double latency_ms = 0;
  double at(double bytes) const { return bytes > 0 && ms_per_byte > 0 ? bytes * ms_per_byte + latency_ms : 0.0; }
};
LinearCost allreduce_cost(const Cluster& cluster, const std::vector<int>& devices);
// The allreduce of a chunk's gradients as the runtime's gradient buckets run it (comm/gradient_bucketer.h,
// at layer granularity): grouped from the chunk's last layer back, a bucket closing before it would exceed
// kGradientBucketBytes (a larger layer's gradients alone), one allreduce per bucket, one at a time.
// Overlapped, a bucket starts once the last backward has passed its layers; else all start after it.
// Grown a layer at a time, last layer first, so a search over ranges gets the same numbers.
class BucketedAllreduce {
 public:
  explicit BucketedAllreduce(const LinearCost& ar) : ar_(ar) {}
  // The layer below those added so far: `bytes` of parameters, its backward `backward_ms`.
  void add_layer(double bytes, double backward_ms);
  // What of the allreduce runs after the backward of the layers added.
  double tail_ms(bool overlap) const;

 private:
  LinearCost ar_;
  double bucket_ = 0;       // the open bucket's bytes
  double ready_ = 0;        // the backward of the layers added
  double done_ = 0;         // overlapped: when the closed buckets' allreduces end
  double closed_ms_ = 0;    // the closed buckets' allreduces one after another
};
// BucketedAllreduce's tail for layers first..last at `rows` rows per micro-batch.
double bucketed_allreduce_ms(const Profile& profile, int first, int last, int rows, const LinearCost& ar,
                             bool overlap);

// One replica's work on layers first..last for `rows` rows of a micro-batch: forward and backward
// time, and the bytes it keeps per micro-batch in flight (its layers' activations plus the input
// it received from layer first − 1). Shared by evaluate() and evaluate_partition().
struct RangeCost {
  double forward_ms = 0;
  double backward_ms = 0;
  double kept_bytes = 0;
};
RangeCost range_cost(const Profile& profile, int first, int last, int rows);
// cost, the range_cost of first..layer − 1, extended to first..layer: the same sums in the same
// order, so a search that grows a range a layer at a time gets range_cost's numbers exactly.
void extend_range_cost(RangeCost& cost, const Profile& profile, int layer, int rows);
// ⌈a / b⌉ for a >= 0, b >= 1, in 64 bits (no overflow at INT_MAX): a micro-batch's rows per replica.
int ceil_div(int a, int b);
LinearCost transfer_cost(const Cluster& cluster, const std::vector<int>& from, const std::vector<int>& to, int rows);

// The latency of a pipeline of elements (F, B, AR) under the formulas above; elements alternate
// stage, transfer, stage, ..., so element 2s is stage s.
struct Element {
  double forward_ms = 0, backward_ms = 0, allreduce_ms = 0;
};
struct PipelineLatency {
  double step_ms = 0;
  int pivot = 0;
  bool pivot_is_round_trip = false;
  double warmup_ms = 0, steady_ms = 0, end_ms = 0;
  std::vector<double> allreduce_tail_ms;  // AR_e − Σ_{e'<e} B_e' per element
};
PipelineLatency dapple_latency(const std::vector<Element>& elements, int microbatches);
PipelineLatency gpipe_latency(const std::vector<Element>& elements, int microbatches);

}  // namespace loom::planner
