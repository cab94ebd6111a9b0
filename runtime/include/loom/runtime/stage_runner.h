// StageRunner: one chunk of a pipeline stage (a Chain of blocks, plus the loss on the last virtual
// stage) run micro-batch by micro-batch, as the executor and the profiler both need it.
//
// The runner keeps, per micro-batch id, the Context forward saved (and the loss value and its
// context on the last stage) until that micro-batch's backward consumes it, so several micro-batches
// are in flight at once under 1F1B. Memory categories follow the contract the simulator is checked
// against: forward under MemoryCategory::activations, backward under workspace.
//   forward          runs the chain (and the loss); a block in `recompute` drops its context as
//                    soon as it is done, and each run of consecutive recomputed blocks keeps only
//                    its input instead; backward first runs those blocks forward again (and the
//                    loss, when the chain's last block recomputes), so a micro-batch in flight
//                    holds the kept blocks' contexts and the runs' inputs, and only the micro-batch
//                    being backwarded holds the recomputed blocks' contexts
//   backward         whole backward; returns the gradient of the chunk's inputs
//   backward_input   the activation-gradient half (zero-bubble BI); backward_weight the other half
// Passing `on_block_done` to backward / backward_weight runs the blocks one at a time and reports
// each block, last to first, as soon as its parameter gradients are final: the gradient bucketer
// is fed from that callback.
// A forward or a full backward can also be run a block at a time (begin_forward / begin_backward,
// step, finish: forward() and backward() are such a pass run to its end), so that the executor can
// interleave two of them (DualPipeV's overlapped pair) and progress its links between blocks.
// Under Precision::bf16 or fp16 (precision.h) the runner rounds to 16 bits the float inputs, every
// block's outputs, the loss gradient and every gradient leaving a block backwards, so it always
// runs the blocks one at a time; fp32 runs the chain as it is. The last stage's backward starts
// from the loss gradient times the micro-batch's loss scale (1 but under fp16: loss_scaler.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include <loom/core/ops.h>
#include <loom/layers/chain.h>
#include <loom/runtime/precision.h>

namespace loom::runtime {

// Where a micro-batch's rows sit in training: the optimizer step its global batch is for (dropout
// masks are keyed by it), the global index of its first sample, and the loss denominator (the count of targets of
// the whole global batch, so micro-batch losses add up to the global-batch mean).
struct MicrobatchInfo {
  std::int64_t step = 0;
  std::int64_t first_sample = 0;
  double loss_denominator = 1.0;
  double loss_scale = 1.0;  // what the last stage's backward starts from (fp16: the loss scaler's scale)
};

// Which blocks recompute their activations in backward instead of keeping them: every block
// (`--recompute`), or the global block indices listed (a plan's per-stage `recompute`).
struct RecomputeBlocks {
  bool all = false;
  std::vector<std::int64_t> blocks;  // global block indices (when not all)

  bool has(std::int64_t block) const;
};

struct StageRunnerOptions {
  std::uint64_t seed = 0;
  RecomputeBlocks recompute;
  Precision precision = Precision::fp32;
};

class StageRunner {
 public:
  using BlockDone = std::function<void(std::size_t block)>;

  // `loss` is null except on the last virtual stage, where it maps {logits, targets} to {loss}.
  StageRunner(Chain& chain, Layer* loss, StageRunnerOptions options);

  // Forward of micro-batch `microbatch`; returns the chain's outputs (the logits on the last stage,
  // whose loss value is then loss(microbatch)).
  TensorList forward(int microbatch, TensorList inputs, Tensor targets, const MicrobatchInfo& info);
  // The loss value of a forwarded micro-batch (last stage only), kept until its backward.
  const Tensor& loss(int microbatch) const;

  // The gradients are taken by value: what arrived is freed as soon as the first block is done.
  TensorList backward(int microbatch, TensorList grad_outputs, const BlockDone& on_block_done = nullptr);
  TensorList backward_input(int microbatch, TensorList grad_outputs);
  void backward_weight(int microbatch, const BlockDone& on_block_done = nullptr);

  // One micro-batch's forward or full backward, run a block per step().
  class Pass {
   public:
    bool done() const { return done_; }
    int microbatch() const { return microbatch_; }

   private:
    friend class StageRunner;
    bool backward_ = false, started_ = false, done_ = false;
    int microbatch_ = 0;
    std::size_t blocks_run_ = 0;
    TensorList x_;       // what flows between blocks
    TensorList inputs_;  // a forward's inputs, alive until it is done (as for a whole forward)
    BlockDone on_block_done_;
  };
  // `host_targets`, when given, are the targets in host memory (the loss checks those: no read of
  // the device's copy back).
  Pass begin_forward(int microbatch, TensorList inputs, Tensor targets, const MicrobatchInfo& info,
                     Tensor host_targets = {});
  Pass begin_backward(int microbatch, TensorList grad_outputs, BlockDone on_block_done = nullptr);
  // Runs the pass's next block: a forward's last step also applies the loss (last stage); a
  // backward's first step also recomputes the forward (recompute) and starts from the loss.
  void step(Pass& pass);
  // The outputs (forward) or the input gradients (backward) of a done pass.
  TensorList finish(Pass& pass);

  // Forward in evaluation mode (no dropout, BatchNorm running statistics); nothing is kept.
  TensorList evaluate(const TensorList& inputs, const MicrobatchInfo& info);

  // Drops what is kept for every micro-batch (the end of a step).
  void release_all() { microbatches_.clear(); }
  Chain& chain() { return chain_; }
  bool has_loss() const { return loss_ != nullptr; }

 private:
  struct Microbatch {
    MicrobatchInfo info;
    Context ctx, loss_ctx;
    std::vector<TensorList> run_inputs;  // per block: the input of each run of recomputed blocks
    Tensor targets;     // last stage
    Tensor host_targets;  // last stage, when the caller has them on the host
    TensorList loss;    // last stage: the loss value until backward
  };
  // The forward of the recomputed blocks (and of the loss when the last block is one), from the
  // inputs their runs kept.
  void recompute_forward(Microbatch& mb);
  bool starts_run(std::size_t block) const { return recompute_[block] && (block == 0 || !recompute_[block - 1]); }
  // Block b's forward in the blocks' GEMM precision, its outputs rounded at the block boundary: the
  // one step of the three forwards (a micro-batch's pass, its recomputation, evaluation).
  TensorList forward_block(std::size_t b, const TensorList& x, Context& ctx);
  // The last stage's loss of a micro-batch's logits, kept in mb.loss until its backward.
  void forward_loss(Microbatch& mb, const Tensor& logits, Tensor host_targets);
  // What the precision does between blocks, forward and backward: bf16 and fp16 round in place
  // (runtime/precision.h), fp32 leaves the tensors as they are.
  void at_block_boundary(const TensorList& tensors) const;
  // The GEMM precision of the blocks' forward and backward: 16-bit operands under bf16 and fp16.
  ops::GemmOperandScope block_math() const;
  // The gradient backward starts from: the loss's (last stage) or the received one.
  TensorList start_backward(Microbatch& mb, TensorList grad_outputs);
  void forward_step(Pass& pass);
  void backward_step(Pass& pass);
  Microbatch& at(int microbatch);

  Chain& chain_;
  Layer* loss_;
  StageRunnerOptions options_;
  std::vector<bool> recompute_;  // per block of the chain
  std::map<int, Microbatch> microbatches_;
};

}  // namespace loom::runtime
