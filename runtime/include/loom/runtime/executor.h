// The executor: runs this rank's program of a schedule over one window of batches.
//
// A rank holds one or more virtual stages (chunks) of the model, each run by a StageRunner, and
// walks its action list in order:
//   RA  wait for the activations of a micro-batch (receives are all posted at the start of the run)
//   F   forward (the first virtual stage reads its rows of the batch; the last applies the loss)
//   SA  start sending the outputs to the next virtual stage (non-blocking)
//   RG  wait for the gradient of the outputs
//   B   backward (BI + BW when split). During the backward that completes a chunk's gradients for
//       an AR, the runner reports each block as soon as it is done, and the gradient bucketer
//       starts that block's allreduce while the remaining blocks still run backward
//   SG  start sending the input gradient back
//   (F;B) an overlapped pair (DualPipeV, schedule/overlap.h) with the receives right before it and
//       the sends right after it, run as one action (overlap_pair.cpp): whichever half has its
//       input runs, a block at a time, the forward first when both have; the links progress
//       between blocks and each half's output leaves as soon as that half ends
//   AR  wait for every gradient bucket of this rank's chunks (sum over replicas)
//   STEP the optimizer step (a callback, given the global batch it completes), which leaves the
//       gradients zero for the next batch (OptimizerStep::step does)
// Batches and rows: the schedule knows its batch structure (Schedule::batches, ::microbatches_per_batch):
// micro-batch j of the program belongs to batch first_step + j / M and owns rows
// even_split(B, M, j % M) of it; replica r of a stage owns even_split(rows, R, r) of those, exactly
// as comm::StageLink splits boundary transfers. The loss is each batch's mean: the loss layer divides
// sums by the batch's number of targets, so gradients are summed (not averaged) across replicas.
// Asynchronous schedules (PipeDream): compute actions carry weight versions (weight_stash.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <loom/comm/gradient_bucketer.h>
#include <loom/comm/process_groups.h>
#include <loom/layers/chain.h>
#include <loom/runtime/precision.h>
#include <loom/runtime/stage_runner.h>
#include <loom/runtime/zero_shard.h>
#include <loom/schedule/overlap.h>
#include <loom/schedule/schedule.h>

namespace loom::runtime {

// Reads rows [first, first + count) of the global batch of optimizer step `step` (the one step index:
// Trainer, Executor, MicrobatchInfo and the layers' Context count the same steps): inputs for the first virtual stage,
// targets for the last (`want_inputs` / `want_targets` say which are needed).
struct BatchRequest {
  std::int64_t step = 0;
  std::int64_t first = 0;
  std::int64_t count = 0;
  bool want_inputs = false;
  bool want_targets = false;
};
using BatchReader = std::function<void(const BatchRequest& request, TensorList& inputs, Tensor& targets)>;

struct ExecutorOptions {
  std::int64_t global_batch = 1;
  // What each chunk's stage runner takes: the seed (dropout), the blocks that recompute their
  // activations, the precision the runners round to (precision.h), which boundary tensors travel in.
  StageRunnerOptions runner;
  // Targets per sample that count in the loss mean (1 for a class label, T for T tokens).
  std::int64_t targets_per_sample = 1;
  // The loss mean is over the targets of the global batch that are not ignored (-100; masked LM):
  // the last stage counts them by reading the whole batch's targets once per batch.
  bool count_targets = false;
  // Where this rank's chunks compute: inputs and targets read from the (host) data are copied
  // there, and boundary tensors received over MPI are staged from host memory to it.
  Device device = Device::cpu();
  comm::BucketOptions buckets{};
  // --zero 1: the buckets reduce-scatter over this replica's slice (comm::BucketSharding), and
  // every forward first waits for the all-gather the last step started (ZeroShard::start_gather).
  ZeroShard* zero = nullptr;
};

struct StepResult {
  std::vector<double> loss_sums;  // per batch of the run: this rank's share of its mean loss
  bool holds_loss = false;        // true on ranks of the last virtual stage
  // The run's time on this rank not spent waiting for others (receive waits, AR, the pair's wait for
  // an input, completing the sends at the end): its compute and the rest of its own work.
  double busy_seconds = 0;
};

// Every action with its start and end (loom::now_us()), for traces and tests.
struct ActionEvent {
  schedule::Action action;
  int stage = 0;
  double start_us = 0, end_us = 0;
};

class WeightStash;

class Executor {
 public:
  // Takes the optimizer step that completes global batch `step` and zeroes the gradients.
  using StepFunction = std::function<void(std::int64_t step)>;

  // `chunks[c]` holds virtual stage schedule.virtual_stage(stage, c) of this rank's stage; `loss`
  // (used by the last virtual stage) maps {logits, targets} to {loss}.
  Executor(const schedule::Schedule& schedule, int stage, comm::ProcessGroups& groups, std::vector<Chain*> chunks,
           Layer* loss, StepFunction optimizer_step, ExecutorOptions options);
  ~Executor();

  // Runs this rank's whole program; its first batch is global batch `first_step` (data and dropout
  // masks are keyed by the batch index). It covers schedule.batches() batches. The last stage's
  // backwards start from `loss_scale` (fp16: OptimizerStep::loss_scale(); it cannot change inside
  // a run, as fp16 runs synchronous schedules: one batch per run).
  StepResult run(std::int64_t first_step, const BatchReader& reader, double loss_scale = 1.0);

  // Forward only, in evaluation mode, over one batch of `batch_size` rows split into the schedule's
  // micro-batches in its forward order; on ranks of the last virtual stage `on_output(first_row,
  // logits, targets)` sees this replica's rows.
  using OutputObserver = std::function<void(std::int64_t first_row, const Tensor& logits, const Tensor& targets)>;
  void evaluate(std::int64_t batch, std::int64_t batch_size, const BatchReader& reader, const OutputObserver& on_output);

  void set_event_observer(std::function<void(const ActionEvent&)> observer) { observer_ = std::move(observer); }
  // This rank's gradient buckets, and how many of them reduce-scatter (--zero 1).
  std::pair<int, int> scattered_buckets() const;

 private:
  struct MicrobatchState;
  struct ChunkState;
  struct OverlapHalf;

  void prepare_microbatches(const std::vector<schedule::Action>& program, std::int64_t first_step);
  void read_rows(const ChunkState& chunk, MicrobatchState& state, const BatchReader& reader);
  void forward(ChunkState& chunk, int microbatch, const BatchReader& reader, std::int64_t first_step);
  void backward(ChunkState& chunk, const schedule::Action& action, bool final_for_batch);
  // The pieces of forward() and of a full backward, for an overlapped pair's halves.
  StageRunner::Pass begin_forward(ChunkState& chunk, int microbatch, const BatchReader& reader);
  void end_forward(ChunkState& chunk, StageRunner::Pass& pass, std::int64_t first_step);
  StageRunner::Pass begin_backward(ChunkState& chunk, int microbatch, bool final_for_batch);
  void end_backward(ChunkState& chunk, StageRunner::Pass& pass);
  // Feeds the gradient bucketer block by block during the backward that completes a chunk's gradients.
  StageRunner::BlockDone block_done(ChunkState& chunk, bool final_for_batch);
  // An overlapped pair's group (overlap_pair.cpp).
  void run_overlap_group(const schedule::OverlapGroup& group, std::int64_t first_step, const BatchReader& reader);
  // Takes a half's input if its receive has completed (or was local); true once it is there.
  bool poll_input(OverlapHalf& half, double since_us);
  void wait_for_an_input(OverlapHalf* halves, double since_us);
  void emit(const schedule::Action& action, double start_us, double end_us);
  void send(ChunkState& chunk, const schedule::Action& action);
  // Waits for a posted receive: the tensors widened back to f32 from a 16-bit precision's boundary
  // dtype (precision.h), charged to communication as the received tensors are.
  TensorList received(comm::PendingReceive& receive) const;
  void run_action(std::size_t index, std::int64_t first_step, const BatchReader& reader);
  void progress_links();  // starts the data receives whose headers landed, reaps finished sends
  void flush_links();  // waits for every send of this rank's links and drops micro-batch state
  double loss_denominator(std::int64_t step, const BatchReader& reader);

  const schedule::Schedule& schedule_;
  int stage_;
  comm::ProcessGroups& groups_;
  StepFunction optimizer_step_;
  ExecutorOptions options_;
  std::vector<std::unique_ptr<ChunkState>> chunks_;
  std::vector<Parameter*> parameters_;  // every trainable parameter of this rank's chunks
  std::unique_ptr<WeightStash> stash_;
  std::vector<char> final_backward_;    // per action: the backward that completes a chunk for an AR
  std::vector<char> pause_points_;      // per action: 1 + its LOOM_TEST_PAUSE_AT point, or 0
  std::map<std::size_t, schedule::OverlapGroup> overlap_groups_;  // by the index the group begins at
  std::function<void(const ActionEvent&)> observer_;
  std::map<std::int64_t, double> target_counts_;  // count_targets: per batch in flight
  std::int64_t batch_rows_ = 0;         // rows of the batch being run
  std::int64_t steps_in_run_ = 0;
  double loss_scale_ = 1.0;             // of the run
  double waited_us_ = 0;                // of the run: time spent waiting for other ranks
  std::vector<Tensor> loss_totals_;     // of the run, per batch: the last stage's losses, f64 on its device
};

}  // namespace loom::runtime
