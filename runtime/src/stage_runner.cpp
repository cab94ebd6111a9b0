// StageRunner: one chunk's forward and backward per micro-batch (see stage_runner.h).
#include <loom/runtime/stage_runner.h>

#include <algorithm>
#include <utility>

#include <loom/base/error.h>
#include <loom/core/memory.h>

namespace loom::runtime {

namespace {
void prepare(Context& ctx, bool training, std::uint64_t seed, const MicrobatchInfo& info) {
  ctx.clear();
  ctx.training = training;
  ctx.seed = seed;
  ctx.step = static_cast<std::uint64_t>(info.step);
  ctx.first_sample = info.first_sample;
}
}  // namespace

bool RecomputeBlocks::has(std::int64_t block) const {
  return all || std::find(blocks.begin(), blocks.end(), block) != blocks.end();
}

StageRunner::StageRunner(Chain& chain, Layer* loss, StageRunnerOptions options)
    : chain_(chain), loss_(loss), options_(std::move(options)) {
  for (std::size_t b = 0; b < chain_.size(); ++b)
    recompute_.push_back(options_.recompute.has(chain_.first_block_index() + static_cast<std::int64_t>(b)));
}

StageRunner::Microbatch& StageRunner::at(int microbatch) {
  auto it = microbatches_.find(microbatch);
  LOOM_CHECK(it != microbatches_.end(), "stage runner: micro-batch ", microbatch, " was not run forward");
  return it->second;
}

const Tensor& StageRunner::loss(int microbatch) const {
  auto it = microbatches_.find(microbatch);
  LOOM_CHECK(it != microbatches_.end() && !it->second.loss.empty(), "stage runner: no loss for micro-batch ",
             microbatch, loss_ ? "" : " (this chunk is not the last stage)");
  return it->second.loss.front();
}

void StageRunner::at_block_boundary(const TensorList& tensors) const {
  round_to_precision_(tensors, options_.precision);
}

ops::GemmOperandScope StageRunner::block_math() const { return ops::GemmOperandScope(value_dtype(options_.precision)); }

TensorList StageRunner::forward_block(std::size_t b, const TensorList& x, Context& ctx) {
  const ops::GemmOperandScope math = block_math();
  TensorList y = chain_.block(b).forward(x, ctx);
  at_block_boundary(y);
  return y;
}

void StageRunner::forward_loss(Microbatch& mb, const Tensor& logits, Tensor host_targets) {
  prepare(mb.loss_ctx, true, options_.seed, mb.info);
  mb.loss_ctx.loss_denominator = mb.info.loss_denominator;
  mb.loss_ctx.host_targets = std::move(host_targets);
  mb.loss = loss_->forward({logits, mb.targets}, mb.loss_ctx);
}

void StageRunner::recompute_forward(Microbatch& mb) {
  MemoryCategoryScope scope(MemoryCategory::activations);
  TensorList x;
  for (std::size_t b = 0; b < chain_.size(); ++b) {
    if (!recompute_[b]) continue;
    if (starts_run(b)) x = std::move(mb.run_inputs[b]);
    x = forward_block(b, x, mb.ctx.child(b));
  }
  mb.run_inputs.clear();
  // The outputs were sent long ago; only the contexts matter.
  if (loss_ && !recompute_.empty() && recompute_.back()) forward_loss(mb, x.at(0), std::move(mb.host_targets));
}

StageRunner::Pass StageRunner::begin_forward(int microbatch, TensorList inputs, Tensor targets, const MicrobatchInfo& info,
                                             Tensor host_targets) {
  MemoryCategoryScope scope(MemoryCategory::activations);
  Microbatch& mb = microbatches_[microbatch];
  mb.info = info;
  mb.targets = std::move(targets);
  mb.host_targets = std::move(host_targets);
  prepare(mb.ctx, true, options_.seed, mb.info);
  at_block_boundary(inputs);  // the first stage's data (received boundary tensors are rounded already)
  mb.run_inputs.assign(chain_.size(), {});
  Pass pass;
  pass.microbatch_ = microbatch;
  pass.x_ = inputs;
  pass.inputs_ = std::move(inputs);
  return pass;
}

void StageRunner::forward_step(Pass& pass) {
  Microbatch& mb = at(pass.microbatch_);
  MemoryCategoryScope scope(MemoryCategory::activations);
  if (pass.blocks_run_ < chain_.size()) {
    const std::size_t b = pass.blocks_run_++;
    if (starts_run(b)) mb.run_inputs[b] = pass.x_;
    pass.x_ = forward_block(b, pass.x_, mb.ctx.child(b));
    if (recompute_[b]) mb.ctx.child(b).clear();  // backward runs it again
  }
  if (pass.blocks_run_ < chain_.size()) return;
  const bool recompute_loss = !recompute_.empty() && recompute_.back();
  if (loss_) {
    LOOM_CHECK(!pass.x_.empty(), "stage runner: the last stage produced no output");
    forward_loss(mb, pass.x_[0], recompute_loss ? mb.host_targets : std::move(mb.host_targets));
    if (recompute_loss) mb.loss_ctx.clear();
  }
  pass.inputs_.clear();
  pass.done_ = true;
}

TensorList StageRunner::forward(int microbatch, TensorList inputs, Tensor targets, const MicrobatchInfo& info) {
  Pass pass = begin_forward(microbatch, std::move(inputs), std::move(targets), info);
  while (!pass.done()) step(pass);
  return finish(pass);
}

TensorList StageRunner::start_backward(Microbatch& mb, TensorList grad_outputs) {
  recompute_forward(mb);
  MemoryCategoryScope scope(MemoryCategory::workspace);
  if (!loss_) return grad_outputs;
  const Tensor& value = mb.loss.at(0);
  Tensor seed = Tensor::full({}, mb.info.loss_scale, value.dtype(), value.device());
  TensorList grad = {loss_->backward({seed}, mb.loss_ctx).at(0)};
  at_block_boundary(grad);
  mb.loss_ctx.clear();
  mb.loss.clear();
  return grad;
}

StageRunner::Pass StageRunner::begin_backward(int microbatch, TensorList grad_outputs, BlockDone on_block_done) {
  at(microbatch);  // it ran forward
  Pass pass;
  pass.backward_ = true;
  pass.microbatch_ = microbatch;
  pass.x_ = std::move(grad_outputs);
  pass.on_block_done_ = std::move(on_block_done);
  return pass;
}

void StageRunner::backward_step(Pass& pass) {
  Microbatch& mb = at(pass.microbatch_);
  if (!pass.started_) {
    pass.x_ = start_backward(mb, std::move(pass.x_));
    pass.started_ = true;
  }
  MemoryCategoryScope scope(MemoryCategory::workspace);
  if (pass.blocks_run_ < chain_.size()) {
    const ops::GemmOperandScope math = block_math();
    const std::size_t b = chain_.size() - 1 - pass.blocks_run_++;
    pass.x_ = chain_.block(b).backward(pass.x_, mb.ctx.child(b));
    at_block_boundary(pass.x_);
    if (pass.on_block_done_) pass.on_block_done_(b);
  }
  if (pass.blocks_run_ < chain_.size()) return;
  mb.ctx.clear();
  pass.done_ = true;
}

void StageRunner::step(Pass& pass) {
  LOOM_CHECK(!pass.done_, "stage runner: step() on a finished pass of micro-batch ", pass.microbatch_);
  pass.backward_ ? backward_step(pass) : forward_step(pass);
}

TensorList StageRunner::finish(Pass& pass) {
  LOOM_CHECK(pass.done_, "stage runner: finish() before the pass of micro-batch ", pass.microbatch_, " is done");
  return std::move(pass.x_);
}

TensorList StageRunner::backward(int microbatch, TensorList grad_outputs, const BlockDone& on_block_done) {
  Pass pass = begin_backward(microbatch, std::move(grad_outputs), on_block_done);
  while (!pass.done()) step(pass);
  return finish(pass);
}

TensorList StageRunner::backward_input(int microbatch, TensorList grad_outputs) {
  Microbatch& mb = at(microbatch);
  TensorList grad = start_backward(mb, std::move(grad_outputs));
  MemoryCategoryScope scope(MemoryCategory::workspace);
  MemoryCategoryScope kept(MemoryCategory::activations);  // as Sequential::backward_input
  const ops::GemmOperandScope math = block_math();
  for (std::size_t b = chain_.size(); b-- > 0;) {
    grad = chain_.block(b).backward_input(grad, mb.ctx.child(b));
    at_block_boundary(grad);
  }
  return grad;
}

void StageRunner::backward_weight(int microbatch, const BlockDone& on_block_done) {
  Microbatch& mb = at(microbatch);
  MemoryCategoryScope scope(MemoryCategory::workspace);
  const ops::GemmOperandScope math = block_math();
  if (on_block_done) {
    for (std::size_t b = chain_.size(); b-- > 0;) {
      chain_.block(b).backward_weight(mb.ctx.child(b));
      on_block_done(b);
    }
  } else {
    chain_.backward_weight(mb.ctx);
  }
  mb.ctx.clear();
}

TensorList StageRunner::evaluate(const TensorList& inputs, const MicrobatchInfo& info) {
  MemoryCategoryScope scope(MemoryCategory::workspace);
  Context ctx;
  prepare(ctx, false, options_.seed, info);
  MemoryCategoryScope kept(MemoryCategory::activations);  // as Sequential::forward
  at_block_boundary(inputs);  // the first stage's data (received boundary tensors are rounded already)
  TensorList x = inputs;
  for (std::size_t b = 0; b < chain_.size(); ++b) x = forward_block(b, x, ctx.child(b));
  return x;
}

}  // namespace loom::runtime
