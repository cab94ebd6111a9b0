// The executor: runs this rank's program of a schedule for one step (a global batch).
//
// A rank holds one or more virtual stages (chunks) of the model, each a Chain of blocks, and walks
// its action list in order:
//   RA  wait for the activations of a micro-batch (receives are all posted at the start of the step)
//   F   forward of the chunk's blocks under MemoryCategory::activations (the first virtual stage
//       reads its rows of the batch; the last applies the loss); the context is kept until backward
//   SA  start sending the outputs to the next virtual stage (non-blocking)
//   RG  wait for the gradient of the outputs
//   B   backward (BI + BW when split); the context is freed after it. During the last backward of
//       the step, each block's gradients are marked final as soon as that block is done, so the
//       gradient buckets start their allreduce while the remaining blocks still run backward
//   SG  start sending the input gradient back
//   AR  wait for every gradient bucket of this rank's chunks (sum over replicas)
//   STEP the optimizer step (a callback), then gradients are zeroed
// Batches and rows: micro-batch j of the program belongs to batch step + j / M (M = micro-batches
// per batch: the whole program for synchronous schedules, 1 for PipeDream, M for 2BW) and owns rows
// even_split(B, M, j % M) of it; replica r of a stage owns even_split(rows, R, r) of those, exactly
// as comm::StageLink splits boundary transfers. The loss is each batch's mean: the loss layer divides
// sums by the batch's number of targets, so gradients are summed (not averaged) across replicas.
// Asynchronous schedules (PipeDream): actions carry weight versions. A forward stashes the weights
// it used (shared by every in-flight micro-batch of that version), its backward runs with exactly
// those weights, and the newest weights are restored for the STEP that follows.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <loom/comm/gradient_bucketer.h>
#include <loom/comm/process_groups.h>
#include <loom/layers/chain.h>
#include <loom/schedule/schedule.h>

namespace loom::schedule {

// Reads rows [first, first + count) of global batch `batch`: inputs for the first virtual stage,
// targets for the last (`want_inputs` / `want_targets` say which are needed).
struct BatchRequest {
  std::int64_t batch = 0;
  std::int64_t first = 0;
  std::int64_t count = 0;
  bool want_inputs = false;
  bool want_targets = false;
};
using BatchReader = std::function<void(const BatchRequest& request, TensorList& inputs, Tensor& targets)>;

struct ExecutorOptions {
  std::int64_t global_batch = 1;
  int microbatches_per_batch = 0;  // 0: the program's micro-batch count (one batch per run)
  std::uint64_t seed = 0;
  // Targets per sample that count in the loss mean (1 for a class label, T for T tokens).
  std::int64_t targets_per_sample = 1;
  bool recompute = false;  // forward without saving, recompute just before backward
  comm::BucketOptions buckets{};
};

struct StepResult {
  std::vector<double> loss_sums;  // per batch of the run: this rank's share of its mean loss
  bool holds_loss = false;        // true on ranks of the last virtual stage
};

// Events for tests and traces: every action with its start and end (loom::now_us()).
struct ActionEvent {
  Action action;
  int stage = 0;
  double start_us = 0, end_us = 0;
};

// Weight-version bookkeeping for tests: the checksum of the weights a compute action ran with.
struct WeightUse {
  Action action;
  double checksum = 0;
};

class Executor {
 public:
  // `chunks[c]` holds virtual stage schedule.virtual_stage(stage, c) of this rank's stage; `loss`
  // (used by the last virtual stage) maps {logits, targets} to {loss}.
  Executor(const Schedule& schedule, int stage, comm::ProcessGroups& groups, std::vector<Chain*> chunks, Layer* loss,
           std::function<void()> optimizer_step, ExecutorOptions options);
  ~Executor();

  // Runs this rank's whole program; its first batch is global batch `first_batch` (data and dropout
  // masks are keyed by the batch index).
  StepResult run(std::int64_t first_batch, const BatchReader& reader);
  // Batches one run() covers.
  int batches_per_run() const;

  // Forward only, in evaluation mode (no dropout, BatchNorm running statistics), over one batch of
  // `batch_size` rows split into the schedule's micro-batches in its forward order; on ranks of the
  // last virtual stage `on_output(first_row, logits, targets)` sees this replica's rows.
  using OutputObserver = std::function<void(std::int64_t first_row, const Tensor& logits, const Tensor& targets)>;
  void evaluate(std::int64_t batch, std::int64_t batch_size, const BatchReader& reader, const OutputObserver& on_output);

  void set_event_observer(std::function<void(const ActionEvent&)> observer) { observer_ = std::move(observer); }
  void record_weight_uses(bool on) { record_weights_ = on; }
  const std::vector<WeightUse>& weight_uses() const { return weight_uses_; }
  comm::GradientBucketer* bucketer(int chunk) { return bucketers_.at(chunk).get(); }

 private:
  struct MicrobatchState;
  struct ChunkState;

  struct Rows {
    std::int64_t batch = 0;      // global batch index
    std::int64_t microbatch_rows = 0;
    std::int64_t first = 0;      // this replica's first row within the batch
    std::int64_t count = 0;      // this replica's rows
  };
  Rows rows_of(int virtual_stage, int microbatch, std::int64_t first_batch) const;
  void run_forward(ChunkState& chunk, MicrobatchState& state, bool save);
  void read_rows(const ChunkState& chunk, MicrobatchState& state, const BatchReader& reader);
  void forward(ChunkState& chunk, int microbatch, const BatchReader& reader);
  void flush_links();  // waits for every send of this rank's links and drops micro-batch state
  void backward(ChunkState& chunk, const Action& action, bool final_for_batch);
  void enter_version(int version);
  void leave_version();
  void stash_if_needed(std::size_t action_index);
  double weight_checksum();

  const Schedule& schedule_;
  int stage_;
  comm::ProcessGroups& groups_;
  Layer* loss_;
  std::function<void()> optimizer_step_;
  ExecutorOptions options_;
  std::vector<std::unique_ptr<ChunkState>> chunks_;
  std::vector<std::unique_ptr<comm::GradientBucketer>> bucketers_;
  std::function<void(const ActionEvent&)> observer_;
  bool record_weights_ = false;
  std::vector<WeightUse> weight_uses_;

  // Weight versions (asynchronous schedules): versions are counted from the start of the run; the
  // newest lives in the parameters, older ones still needed are stashed copies.
  std::vector<Parameter*> parameters_;           // every trainable parameter of this rank's chunks
  int newest_version_ = 0;
  std::int64_t batch_rows_ = 0;                   // rows of the batch being run
  std::map<int, std::vector<Tensor>> stashed_;    // version -> parameter values
  std::map<int, std::size_t> last_use_;           // version -> index of its last compute action
  std::vector<Tensor> newest_values_;             // held while an older version is swapped in
};

}  // namespace loom::schedule
