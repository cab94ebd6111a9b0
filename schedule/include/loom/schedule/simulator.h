// Predicts the timeline of a schedule from per-stage costs. The planner scores plans with it and
// `loom simulate` prints it, so "predicted" means one thing everywhere.
//
// Model (the executor's semantics, docs/schedules.md): each rank runs its program in order;
// compute, AR and STEP block for their cost; a send starts a transfer and returns at once; a
// receive waits until its message has arrived (receives are posted early, so arrival never depends
// on when the receiver got there). A transfer of b bytes on a link starts when the link is free
// (one message at a time per direction, in the sender's order) and arrives b/bandwidth + latency
// later. Sends between chunks on the same rank (a local hand-over, e.g. at the bottom of a V) take
// no time and no link. Pure data: no tensors, no MPI.
#pragma once

#include <limits>
#include <vector>

#include <loom/schedule/schedule.h>

namespace loom::schedule {

// Costs of one stage for one micro-batch (all of the stage's chunks together; a chunk costs 1/v).
struct StageCost {
  double forward_ms = 0;
  double backward_ms = 0;           // a whole B
  double backward_input_ms = -1;    // BI; < 0 means backward_ms / 2
  double backward_weight_ms = -1;   // BW; < 0 means backward_ms / 2
  double allreduce_ms = 0;          // one AR (the part not hidden behind backward)
  double step_ms = 0;               // one STEP
  double activation_bytes = 0;      // activations saved by F for one micro-batch, freed by B/BW
  double boundary_bytes = 0;        // output activation sent to the next virtual stage (its gradient comes back)
  // What a forward holds above what it keeps, only while it runs (temporaries, outputs not kept):
  // the peak of a stage is reached during a forward, so it adds once, on top of the kept bytes.
  double forward_transient_bytes = 0;
  // Per chunk of the stage, for chunks that differ (a planner's uneven partition into virtual
  // stages): one entry per chunk each, or all empty (the numbers above, a chunk costing 1/v). Given,
  // they replace forward_ms, backward_ms (BI = BW = half a chunk's B), activation_bytes and
  // boundary_bytes (the chunk's output, sent to the next virtual stage).
  std::vector<double> chunk_forward_ms, chunk_backward_ms, chunk_activation_bytes, chunk_boundary_bytes;
  // Optional with the per-chunk costs, one entry per chunk each (empty: BI = BW = half a B).
  std::vector<double> chunk_backward_input_ms, chunk_backward_weight_ms;
  // Optional with the per-chunk costs, one per chunk (empty: a stage's peak is its in-flight activations plus
  // forward_transient_bytes). What else a stage holds at some moment, so that its peak is close to the
  // executor's (the joint planner's memory model).
  struct ChunkMemory {
    double forward_extra = 0;   // a forward's peak above what is held once it is done
    double backward_extra = 0;  // a B's peak above what was held before it
    double input_extra = 0;     // a BI's
    double weight_extra = 0;    // a BW's
    double split_held = 0;      // held from a BI to its BW on top of the chunk's activations
    // The output gradient a B or BI received from another stage (its input, received, is part of the chunk's
    // activations). A payload that landed early and waits for its turn is not counted: that depends on
    // timing, and the peak here must not (the planner's search relies on it).
    double gradient_receive = 0;
  };
  std::vector<ChunkMemory> chunk_memory;
  bool per_chunk() const { return !chunk_forward_ms.empty(); }
};

// A directed stage-to-stage link. The defaults make communication free.
struct Link {
  double bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();
  double latency_ms = 0;
};

struct CostModel {
  std::vector<StageCost> stages;  // one per stage, or one for all stages
  // links[s]: between stage s and the next (S−1 → 0 for the looped wrap of interleaved schedules),
  // both directions; a V placement's way back up (s + 1 → s) uses links[s] too. Empty: free; one
  // entry: the same link everywhere.
  std::vector<Link> links;

  const StageCost& stage(int s) const;
  Link link(int from_stage) const;
};

// Every stage with the same costs and free communication.
CostModel uniform_costs(double forward_ms, double backward_ms);

struct TimedAction {
  int stage = 0;
  int index = 0;        // position in the stage's program
  Action action;
  double start_ms = 0;  // for a receive: when the rank reached it
  double end_ms = 0;    // for a receive: when the message was there; for a send: == start_ms
};

struct Transfer {
  int from_stage = 0, to_stage = 0;
  Action send;  // SA or SG on the sender
  double start_ms = 0, arrival_ms = 0;
};

struct StageStats {
  double end_ms = 0;             // when the stage's last action ends
  double compute_ms = 0;         // F, B, BI, BW
  double busy_ms = 0;            // compute + AR + STEP
  double idle_ms = 0;            // step time − busy
  int peak_inflight = 0;         // (micro-batch, chunk) pairs between F and their B/BW, at most
  double peak_activation_units = 0;  // the same in micro-batch activations of the stage (chunk = 1/v)
  double peak_activation_bytes = 0;  // units × activation_bytes + forward_transient_bytes
  int peak_weight_versions = 1;  // weight versions alive at once (PipeDream stashing)
};

struct SimulationResult {
  double step_ms = 0;          // makespan: first action to last, over all stages
  double bubble_fraction = 0;  // 1 − Σ busy / (S · step_ms)
  // Steady-state time per micro-batch: step_ms / M for synchronous schedules; for asynchronous
  // ones the spacing of stage 0's backward ends in the middle of the window.
  double ms_per_microbatch = 0;
  std::vector<StageStats> stages;
  std::vector<TimedAction> timeline;  // every action of every stage
  std::vector<Transfer> transfers;
};

// Stage s's peak_activation_bytes (StageStats): from its program and costs alone, in program order.
double stage_peak_activation_bytes(const Schedule& schedule, int s, const StageCost& cost);

// Throws loom::Error if the schedule deadlocks, the cost model does not fit it, or it is larger
// than check_size() allows (validator.h).
SimulationResult simulate(const Schedule& schedule, const CostModel& costs);

}  // namespace loom::schedule
