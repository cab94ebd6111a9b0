// A given partition evaluated under any synchronous schedule kind (issue 28): the model's layers cut
// into the S·v virtual stages of the kind (in model order), each pipeline stage's replicas, M, run
// through the schedule simulator with per-chunk costs from the profile. It predicts the step time,
// the bubble and each pipeline stage's memory per device — parameters, gradients and optimizer
// state of every chunk it holds, plus the simulator's peak of in-flight chunk activations (each
// chunk's own bytes, its received input included) — so that a planner can compare kinds.
//
// Devices: pipeline stage p's replicas take the next R_p devices in order (stage 0 the first R_0).
// A chunk replica computes ceil(b / R_p) rows of a micro-batch of b = global batch / M samples; the
// link after pipeline stage p is the cost model's transfer between stage p's and p + 1's devices
// (the looped wrap S − 1 → 0 between the last and the first), as for plans (plan_simulation.h).
#pragma once

#include <algorithm>

#include <string>
#include <utility>
#include <vector>

#include <loom/schedule/schedule.h>
#include <loom/schedule/schedule_kind.h>
#include <loom/schedule/simulator.h>

#include <loom/planner/cluster.h>
#include <loom/planner/cost_model.h>
#include <loom/planner/profile.h>

namespace loom::planner {

struct Partition {
  schedule::ScheduleKind kind = schedule::ScheduleKind::dapple;
  int chunks = 1;        // v (2 for the V-shaped kinds)
  int microbatches = 1;  // M
  int global_batch = 1;
  std::vector<std::pair<int, int>> layers;  // per virtual stage, in model order: first and last layer
  std::vector<int> replicas;                // per pipeline stage; empty: 1 each
  // Per pipeline stage, the devices of its replicas (a planner's placement); empty: in order, stage 0
  // on the first devices.
  std::vector<std::vector<int>> devices;
  // Per pipeline stage, the global layers whose activations it recomputes (ascending, each one of
  // its own; planner/recomputation.h); empty: none anywhere.
  std::vector<std::vector<int>> recompute = {};
  bool zero = false;  // ZeRO-1 (CostOptions::zero; either turns it on)
  // Gradients allreduced bucket by bucket during the last backward (CostOptions::overlap_allreduce;
  // either turns it on).
  bool overlap_allreduce = false;
};

// A stage's bytes per device besides its activations: what it holds all along (parameters, gradients,
// optimizer state, gradient buckets, the communicators' windows) and what it holds for a while after the
// optimizer step, when it holds no activations (ZeRO-1's parameter all-gather window).
struct StageStaticBytes {
  double held = 0;
  double after_step = 0;
  // The stage's peak when its activations peak at `activation_bytes`.
  double peak(double activation_bytes) const { return held + std::max(activation_bytes, after_step); }
};

struct StageEvaluation {
  std::vector<int> devices;
  double static_bytes = 0;      // held all along: parameters, gradients, optimizer state, buckets, windows
  double after_step_bytes = 0;  // StageStaticBytes::after_step
  double activation_bytes = 0;  // the simulator's peak of kept activations
  double peak_bytes = 0;        // StageStaticBytes::peak: what one of its devices holds at most
};

struct PartitionEvaluation {
  schedule::Schedule schedule;
  schedule::SimulationResult simulation;
  std::vector<StageEvaluation> stages;
  double peak_bytes = 0;  // the fullest device
  bool fits = true;       // every device within the cluster's memory
  std::string why_not;    // when it does not fit: which stage, by how many bytes
};

// Throws loom::Error for a partition that is not one (layers not covering the profile in order,
// a recomputed layer not ascending or not its stage's, S·v not a multiple of v, more devices than the cluster has, an asynchronous kind, M not dividing
// the batch, or sizes the kind refuses).
// `schedule`: the partition's kind made for its stages, M and chunks already (the joint search
// scores many partitions of one shape); null: made here.
PartitionEvaluation evaluate_partition(const Profile& profile, const Cluster& cluster, const Partition& partition,
                                       const CostOptions& options = {}, const schedule::Schedule* schedule = nullptr);

// Pipeline stage s's costs under `p` (its chunks' times and bytes, as evaluate_partition simulates them)
// on `devices`, and its bytes besides the activations. ZeRO-1 when `options` or `p` asks for it.
schedule::StageCost stage_costs(const Profile& profile, const Cluster& cluster, const Partition& p,
                                const schedule::Schedule& sched, const std::vector<int>& devices, int s,
                                const CostOptions& options, StageStaticBytes& bytes);

// "0-3,4-7,8-11" -> {{0, 3}, {4, 7}, {8, 11}}; a bad range is a loom::Error naming `source`.
std::vector<std::pair<int, int>> parse_layer_ranges(const std::string& text, const std::string& source);

}  // namespace loom::planner
