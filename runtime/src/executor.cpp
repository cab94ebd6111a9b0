// Executor: one rank's walk through its program (see executor.h for the semantics).
#include <loom/runtime/executor.h>

#include <algorithm>

#include <loom/comm/detail/test_hooks.h>
#include <loom/comm/range_split.h>
#include <loom/core/ops.h>
#include <loom/core/timer.h>
#include <loom/layers/loss.h>
#include <loom/runtime/stage_runner.h>
#include <loom/runtime/weight_stash.h>
#include <loom/schedule/overlap.h>

#include "executor_state.h"

namespace loom::runtime {

using schedule::Action;
using schedule::Op;

namespace {
int replica_index(comm::ProcessGroups& groups, int virtual_stage) {
  for (const auto& p : groups.positions())
    if (p.stage == virtual_stage) return p.replica;
  LOOM_THROW("executor: this rank holds no replica of virtual stage ", virtual_stage);
}

// Per action: 1 for the last B/BW of a chunk before each AR (or the end), whose blocks complete
// that chunk's gradients.
std::vector<char> final_backwards(const std::vector<Action>& program, int chunks) {
  std::vector<char> final_backward(program.size(), 0);
  std::vector<long> last_seen(static_cast<std::size_t>(chunks), -1);
  for (std::size_t i = 0; i < program.size(); ++i) {
    const Op op = program[i].op;
    if (schedule::ends_backward(op)) last_seen[program[i].chunk] = static_cast<long>(i);
    if (op == Op::AllReduce || i + 1 == program.size()) {
      for (long& seen : last_seen) {
        if (seen >= 0) final_backward[seen] = 1;
        seen = -1;
      }
    }
  }
  return final_backward;
}

// Per action: 1 + the LOOM_TEST_PAUSE_AT point it is (comm/detail/test_hooks.h), 0 for none: the first
// forward of each batch (warmup) and its first forward after a backward (steady).
std::vector<char> pause_points(const std::vector<Action>& program, int per_batch) {
  std::vector<char> points(program.size(), 0);
  std::map<int, int> seen;  // per batch: 1 after its first forward, 2 after a backward, 3 after steady
  for (std::size_t i = 0; i < program.size(); ++i) {
    int& state = seen[program[i].microbatch / per_batch];
    if (program[i].op == Op::Forward && (state == 0 || state == 2)) {
      points[i] = static_cast<char>(1 + static_cast<int>(state == 0 ? comm::PausePhase::warmup : comm::PausePhase::steady));
      state = state == 0 ? 1 : 3;
    }
    if (schedule::starts_backward(program[i].op) && state == 1) state = 2;
  }
  return points;
}

// --zero 1: where each gradient of `chunk` (in the bucketer's order) lies in the shard's flat order.
std::optional<comm::BucketSharding> bucket_sharding(const ZeroShard* zero, comm::ReduceGroup& group, Chain* chunk) {
  if (!zero) return std::nullopt;
  LOOM_CHECK(group.members().world_ranks() == zero->world_ranks(),
             "internal: --zero 1 needs the stage's reduce group in replica order");
  comm::BucketSharding sharding{zero->owners(), {}};
  for (std::size_t b = 0; b < chunk->size(); ++b)
    for (const NamedParameter& p : chunk->block(b).parameters())
      if (p.parameter->trainable) sharding.starts.push_back(zero->start_of(p.parameter));
  return sharding;
}
}  // namespace

Executor::Executor(const schedule::Schedule& schedule, int stage, comm::ProcessGroups& groups,
                   std::vector<Chain*> chunks, Layer* loss, StepFunction optimizer_step, ExecutorOptions options)
    : schedule_(schedule), stage_(stage), groups_(groups), optimizer_step_(std::move(optimizer_step)),
      options_(options) {
  LOOM_CHECK(stage >= 0 && stage < schedule.stages, "executor: stage ", stage, " of a ", schedule.stages,
             "-stage schedule");
  LOOM_CHECK(static_cast<int>(chunks.size()) == schedule.chunks, "executor: ", chunks.size(),
             " model chunks for a schedule with ", schedule.chunks, " chunks per rank");
  LOOM_CHECK(groups.layout().stages() == schedule.virtual_stages(), "executor: the process layout has ",
             groups.layout().stages(), " stages, the schedule ", schedule.virtual_stages(), " virtual stages");
  LOOM_CHECK(schedule.microbatches % schedule.batches() == 0, "executor: ", schedule.microbatches,
             " micro-batches in the program are not whole batches of its ", schedule.batches(), " steps");
  LOOM_CHECK(options_.global_batch >= schedule.microbatches_per_batch(), "executor: global batch ",
             options_.global_batch, " is smaller than its ", schedule.microbatches_per_batch(), " micro-batches");
  comm::BucketOptions buckets = options_.buckets;
  for (int c = 0; c < schedule.chunks; ++c) {
    auto state = std::make_unique<ChunkState>();
    state->virtual_stage = schedule.virtual_stage(stage, c);
    state->first = schedule.is_first(stage, c);
    state->last = schedule.is_last(stage, c);
    state->replica = replica_index(groups, state->virtual_stage);
    const int v = state->virtual_stage;
    if (!state->last && schedule.stage_of(v + 1) == stage) state->next_local = schedule.chunk_of(v + 1);
    if (!state->first && schedule.stage_of(v - 1) == stage) state->previous_local = schedule.chunk_of(v - 1);
    LOOM_CHECK(!state->last || loss != nullptr, "executor: the last virtual stage needs a loss layer");
    state->runner = std::make_unique<StageRunner>(*chunks[c], state->last ? loss : nullptr,
                                                  options_.runner);
    std::vector<Tensor> gradients;
    for (std::size_t b = 0; b < chunks[c]->size(); ++b) {
      state->block_gradients.emplace_back();
      for (const NamedParameter& p : chunks[c]->block(b).parameters()) {
        if (!p.parameter->trainable) continue;
        parameters_.push_back(p.parameter);
        state->block_gradients.back().push_back(static_cast<int>(gradients.size()));
        gradients.push_back(p.parameter->grad);
      }
    }
    comm::ReduceGroup& group = groups.replicas(state->virtual_stage);
    // A group of one reduces nothing, but on NCCL (an explicit --reduce-backend nccl) it still runs
    // the collective: the one-GPU check of the NCCL gradient path.
    const bool reduces = group.size() > 1 || group.members().backend() == comm::Backend::nccl;
    if (reduces && !gradients.empty()) {
      // All of this rank's bucketers share one progress thread: their allreduces run one at a
      // time, in launch order (comm/progress_thread.h).
      if (buckets.background && !buckets.progress) buckets.progress = std::make_shared<comm::ProgressThread>();
      state->bucketer = std::make_unique<comm::GradientBucketer>(group, gradients, buckets,
                                                                 bucket_sharding(options_.zero, group, chunks[c]));
    }
    chunks_.push_back(std::move(state));
  }
  const auto& program = schedule.programs.at(stage);
  stash_ = std::make_unique<WeightStash>(parameters_, program);
  final_backward_ = final_backwards(program, schedule.chunks);
  for (const schedule::OverlapGroup& group : schedule::overlap_groups(program)) overlap_groups_[group.begin] = group;
  pause_points_ = pause_points(program, schedule.microbatches_per_batch());
}

Executor::~Executor() = default;

std::pair<int, int> Executor::scattered_buckets() const {
  std::pair<int, int> counts{0, 0};
  for (const auto& chunk : chunks_)
    for (int b = 0; chunk->bucketer && b < chunk->bucketer->buckets(); ++b) {
      counts.first += chunk->bucketer->scattered(b);
      ++counts.second;
    }
  return counts;
}

// Rows of every micro-batch the actions touch, and every receive posted before any compute.
void Executor::prepare_microbatches(const std::vector<Action>& program, std::int64_t first_step) {
  const int per_batch = schedule_.microbatches_per_batch();
  for (const Action& a : program) {
    if (!schedule::is_compute(a.op) && !schedule::is_communication(a.op)) continue;
    ChunkState& chunk = *chunks_.at(a.chunk);
    MicrobatchState& state = chunk.microbatches[a.microbatch];
    auto& rows = state.rows;
    rows.step = first_step + a.microbatch / per_batch;
    const comm::Range mb = comm::even_split(batch_rows_, per_batch, a.microbatch % per_batch);
    rows.microbatch_rows = mb.size();
    const comm::Range mine =
        comm::even_split(mb.size(), groups_.layout().replicas(chunk.virtual_stage), chunk.replica);
    rows.first = mb.begin + mine.begin;
    rows.count = mine.size();
    if (a.op == Op::RecvActivation && chunk.previous_local < 0)
      state.activation_receive = groups_.link(chunk.virtual_stage - 1)
                                     .post_receive(comm::Direction::forward, a.microbatch, rows.microbatch_rows,
                                                   options_.device);
    if (a.op == Op::RecvGradient && chunk.next_local < 0)
      state.gradient_receive = groups_.link(chunk.virtual_stage)
                                   .post_receive(comm::Direction::backward, a.microbatch, rows.microbatch_rows,
                                                 options_.device);
  }
}

void Executor::read_rows(const ChunkState& chunk, MicrobatchState& state, const BatchReader& reader) {
  if (!chunk.first && !chunk.last) return;
  TensorList inputs;
  Tensor targets;
  {
    // The data is read into host memory (pinned for a GPU) and a rank computing on a device copies
    // its rows there (from pinned memory without waiting: the copy runs ahead of the compute).
    const PinnedHostScope staging(options_.device);
    reader({state.rows.step, state.rows.first, state.rows.count, chunk.first, chunk.last}, inputs, targets);
  }
  if (chunk.first) {
    for (Tensor& input : inputs)
      if (input.defined()) input = input.to(options_.device);
    state.inputs = std::move(inputs);
  }
  if (chunk.last) {
    state.host_targets = targets.defined() && targets.device().is_cpu() ? targets : Tensor();
    state.targets = targets.defined() ? targets.to(options_.device) : targets;
  }
}

// Between actions: starts the data receives whose headers have landed (so the rows arrive while
// this rank computes) and reaps finished sends.
void Executor::progress_links() {
  for (auto& chunk : chunks_) {
    if (!chunk->last && chunk->next_local < 0) groups_.link(chunk->virtual_stage).progress();
    if (!chunk->first && chunk->previous_local < 0) groups_.link(chunk->virtual_stage - 1).progress();
  }
}

void Executor::flush_links() {
  for (auto& chunk : chunks_) {
    if (!chunk->last && chunk->next_local < 0) groups_.link(chunk->virtual_stage).flush();
    if (!chunk->first && chunk->previous_local < 0) groups_.link(chunk->virtual_stage - 1).flush();
    chunk->microbatches.clear();
    chunk->runner->release_all();
  }
}

double Executor::loss_denominator(std::int64_t step, const BatchReader& reader) {
  const double all = static_cast<double>(options_.global_batch) * static_cast<double>(options_.targets_per_sample);
  if (!options_.count_targets) return all;
  auto it = target_counts_.find(step);
  if (it == target_counts_.end()) {
    TensorList inputs;
    Tensor targets;
    reader({step, 0, options_.global_batch, false, true}, inputs, targets);
    it = target_counts_.emplace(step, static_cast<double>(std::max<std::int64_t>(count_targets(targets), 1))).first;
    while (target_counts_.size() > 64) target_counts_.erase(target_counts_.begin());
  }
  return it->second;
}

StageRunner::Pass Executor::begin_forward(ChunkState& chunk, int microbatch, const BatchReader& reader) {
  if (options_.zero) options_.zero->wait_gather();  // the weights the last step updated, whole
  MicrobatchState& state = chunk.microbatches.at(microbatch);
  read_rows(chunk, state, reader);
  const MicrobatchInfo info{state.rows.step, state.rows.first, loss_denominator(state.rows.step, reader), loss_scale_};
  return chunk.runner->begin_forward(microbatch, std::move(state.inputs), std::move(state.targets), info,
                                     std::move(state.host_targets));
}

void Executor::end_forward(ChunkState& chunk, StageRunner::Pass& pass, std::int64_t first_step) {
  MicrobatchState& state = chunk.microbatches.at(pass.microbatch());
  TensorList outputs = chunk.runner->finish(pass);
  if (!chunk.last) {
    state.outputs = std::move(outputs);
    return;
  }
  // Summed where it was computed, in f64 and in program order (the sum a host loop over item() would
  // make, bit for bit), and read once at the end of the run: no device-to-host wait per micro-batch.
  const MemoryCategoryScope category(MemoryCategory::workspace);
  const Tensor loss = chunk.runner->loss(pass.microbatch()).to(DType::f64);
  Tensor& total = loss_totals_.at(static_cast<std::size_t>(state.rows.step - first_step));
  if (total.defined())
    ops::add(total, loss, total);
  else
    total = loss;
}

void Executor::forward(ChunkState& chunk, int microbatch, const BatchReader& reader, std::int64_t first_step) {
  StageRunner::Pass pass = begin_forward(chunk, microbatch, reader);
  while (!pass.done()) chunk.runner->step(pass);
  end_forward(chunk, pass, first_step);
}

StageRunner::BlockDone Executor::block_done(ChunkState& chunk, bool final_for_batch) {
  if (!final_for_batch || !chunk.bucketer) return nullptr;
  return [&chunk](std::size_t block) {
    for (int g : chunk.block_gradients[block]) chunk.bucketer->mark_ready(g);
  };
}

StageRunner::Pass Executor::begin_backward(ChunkState& chunk, int microbatch, bool final_for_batch) {
  MicrobatchState& state = chunk.microbatches.at(microbatch);
  return chunk.runner->begin_backward(microbatch, std::move(state.grad_outputs), block_done(chunk, final_for_batch));
}

void Executor::end_backward(ChunkState& chunk, StageRunner::Pass& pass) {
  MicrobatchState& state = chunk.microbatches.at(pass.microbatch());
  TensorList grad = chunk.runner->finish(pass);
  state.grad_outputs.clear();
  if (!chunk.first) state.grad_inputs = std::move(grad);
}

void Executor::backward(ChunkState& chunk, const Action& action, bool final_for_batch) {
  MicrobatchState& state = chunk.microbatches.at(action.microbatch);
  const StageRunner::BlockDone on_block_done = block_done(chunk, final_for_batch);
  TensorList grad;
  if (action.op == Op::Backward)
    grad = chunk.runner->backward(action.microbatch, std::move(state.grad_outputs), on_block_done);
  else if (action.op == Op::BackwardInput)
    grad = chunk.runner->backward_input(action.microbatch, std::move(state.grad_outputs));
  else
    chunk.runner->backward_weight(action.microbatch, on_block_done);
  state.grad_outputs.clear();
  if (schedule::starts_backward(action.op) && !chunk.first) state.grad_inputs = std::move(grad);
}

void Executor::send(ChunkState& chunk, const Action& action) {
  MicrobatchState& state = chunk.microbatches.at(action.microbatch);
  const bool forward = action.op == Op::SendActivation;
  if (const int local = forward ? chunk.next_local : chunk.previous_local; local >= 0) {  // hand over
    MicrobatchState& to = chunks_.at(static_cast<std::size_t>(local))->microbatches.at(action.microbatch);
    (forward ? to.inputs : to.grad_outputs) = std::move(forward ? state.outputs : state.grad_inputs);
    (forward ? state.outputs : state.grad_inputs).clear();
    return;
  }
  const MemoryCategoryScope category(MemoryCategory::communication);  // bf16 copies on their way out
  if (forward) {
    groups_.link(chunk.virtual_stage)
        .send(comm::Direction::forward, action.microbatch, to_boundary(state.outputs, options_.runner.precision),
              state.rows.microbatch_rows);
    state.outputs.clear();
  } else {
    groups_.link(chunk.virtual_stage - 1)
        .send(comm::Direction::backward, action.microbatch, to_boundary(state.grad_inputs, options_.runner.precision),
              state.rows.microbatch_rows);
    state.grad_inputs.clear();
  }
}

TensorList Executor::received(comm::PendingReceive& receive) const {
  const MemoryCategoryScope category(MemoryCategory::communication);
  return from_boundary(receive.wait(), options_.runner.precision);
}

void Executor::run_action(std::size_t index, std::int64_t first_step, const BatchReader& reader) {
  const Action& a = schedule_.programs.at(stage_)[index];
  if (pause_points_[index]) comm::test_pause_at(static_cast<comm::PausePhase>(pause_points_[index] - 1));
  switch (a.op) {
    case Op::RecvActivation: {  // a local boundary's tensors were handed over by its SA
      MicrobatchState& state = chunks_[a.chunk]->microbatches.at(a.microbatch);
      if (chunks_[a.chunk]->previous_local < 0) state.inputs = received(state.activation_receive);
      break;
    }
    case Op::RecvGradient: {
      MicrobatchState& state = chunks_[a.chunk]->microbatches.at(a.microbatch);
      if (chunks_[a.chunk]->next_local < 0) state.grad_outputs = received(state.gradient_receive);
      break;
    }
    case Op::Forward:
    case Op::Backward:
    case Op::BackwardInput:
    case Op::BackwardWeight:
      stash_->enter(a.version);
      if (a.op == Op::Forward)
        forward(*chunks_[a.chunk], a.microbatch, reader, first_step);
      else
        backward(*chunks_[a.chunk], a, final_backward_[index] != 0);
      stash_->leave(a.version, index);
      break;
    case Op::SendActivation:
    case Op::SendGradient:
      send(*chunks_[a.chunk], a);
      break;
    case Op::AllReduce:
      for (auto& chunk : chunks_)
        if (chunk->bucketer) chunk->bucketer->wait();
      break;
    case Op::Step:
      stash_->before_step(index);
      optimizer_step_(first_step + steps_in_run_++);  // it leaves the gradients zero (optimizer_step.h)
      stash_->after_step();
      break;
  }
}

StepResult Executor::run(std::int64_t first_step, const BatchReader& reader, double loss_scale) {
  loss_scale_ = loss_scale;
  const auto& program = schedule_.programs.at(stage_);
  batch_rows_ = options_.global_batch;
  steps_in_run_ = 0;
  StepResult result;
  result.holds_loss = std::any_of(chunks_.begin(), chunks_.end(), [](const auto& c) { return c->last; });
  result.loss_sums.assign(static_cast<std::size_t>(schedule_.batches()), 0.0);
  loss_totals_.assign(result.loss_sums.size(), Tensor());
  stash_->begin_run();
  prepare_microbatches(program, first_step);
  const double run_start = now_us();
  waited_us_ = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    if (const auto group = overlap_groups_.find(i); group != overlap_groups_.end()) {
      run_overlap_group(group->second, first_step, reader);
      i = group->second.end - 1;
      progress_links();
      continue;
    }
    const double start = now_us();
    if (schedule::is_compute(program[i].op)) comm::test_slow_down();
    run_action(i, first_step, reader);
    const double end = now_us();
    if (schedule::is_receive(program[i].op) || program[i].op == Op::AllReduce) waited_us_ += end - start;
    if (observer_) observer_({program[i], stage_, start, end});
    if (schedule::is_compute(program[i].op)) progress_links();
  }
  for (std::size_t b = 0; b < loss_totals_.size(); ++b)
    if (loss_totals_[b].defined()) result.loss_sums[b] += loss_totals_[b].item();  // one read per batch
  loss_totals_.clear();
  const double flush_start = now_us();
  flush_links();
  const double run_end = now_us();
  waited_us_ += run_end - flush_start;
  result.busy_seconds = std::max(0.0, run_end - run_start - waited_us_) / 1e6;
  stash_->check_empty();
  return result;
}

void Executor::evaluate(std::int64_t batch, std::int64_t batch_size, const BatchReader& reader,
                        const OutputObserver& on_output) {
  const int per_batch = schedule_.microbatches_per_batch();
  LOOM_CHECK(batch_size >= per_batch, "evaluate: batch of ", batch_size, " rows for ", per_batch, " micro-batches");
  batch_rows_ = batch_size;
  // The forward actions of one batch, in this rank's program order.
  std::vector<Action> program;
  for (const Action& a : schedule_.programs.at(stage_))
    if ((a.op == Op::Forward || a.op == Op::RecvActivation || a.op == Op::SendActivation) && a.microbatch < per_batch)
      program.push_back(a);
  prepare_microbatches(program, batch);
  for (const Action& a : program) {
    ChunkState& chunk = *chunks_[a.chunk];
    MicrobatchState& state = chunk.microbatches.at(a.microbatch);
    if (a.op == Op::RecvActivation) {
      if (chunk.previous_local < 0) state.inputs = received(state.activation_receive);
    } else if (a.op == Op::SendActivation) {
      send(chunk, a);
    } else {
      read_rows(chunk, state, reader);
      state.outputs = chunk.runner->evaluate(state.inputs, {state.rows.step, state.rows.first, 0.0});
      state.inputs.clear();
      if (chunk.last) {
        on_output(state.rows.first, state.outputs.at(0), state.targets);
        state.outputs.clear();
      }
    }
  }
  flush_links();
}

}  // namespace loom::runtime
