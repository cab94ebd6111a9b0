// Executor: one rank's walk through its program (see executor.h for the semantics).
#include <loom/schedule/executor.h>

#include <algorithm>

#include <loom/comm/partition.h>
#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/timer.h>

namespace loom::schedule {

struct Executor::MicrobatchState {
  Rows rows;
  Context ctx;
  Context loss_ctx;
  TensorList inputs;        // received or read; kept until backward only when recomputing
  Tensor targets;           // last virtual stage
  TensorList outputs;       // until sent
  TensorList grad_outputs;  // received
  TensorList grad_inputs;   // until sent
  comm::PendingReceive activation_receive;
  comm::PendingReceive gradient_receive;
};

struct Executor::ChunkState {
  int chunk = 0;
  int virtual_stage = 0;
  Chain* chain = nullptr;
  bool first = false;
  bool last = false;
  int replica = 0;
  std::map<int, MicrobatchState> microbatches;
  std::vector<std::vector<int>> block_gradients;  // per block: its gradients' bucketer indices
};

namespace {
int replica_index(comm::ProcessGroups& groups, int virtual_stage) {
  for (const auto& p : groups.positions())
    if (p.stage == virtual_stage) return p.replica;
  LOOM_THROW("executor: this rank holds no replica of virtual stage ", virtual_stage);
}
}  // namespace

Executor::Executor(const Schedule& schedule, int stage, comm::ProcessGroups& groups, std::vector<Chain*> chunks,
                   Layer* loss, std::function<void()> optimizer_step, ExecutorOptions options)
    : schedule_(schedule), stage_(stage), groups_(groups), loss_(loss), optimizer_step_(std::move(optimizer_step)),
      options_(options) {
  LOOM_CHECK(stage >= 0 && stage < schedule.stages, "executor: stage ", stage, " of a ", schedule.stages,
             "-stage schedule");
  LOOM_CHECK(static_cast<int>(chunks.size()) == schedule.chunks, "executor: ", chunks.size(),
             " model chunks for a schedule with ", schedule.chunks, " chunks per rank");
  LOOM_CHECK(groups.layout().stages() == schedule.virtual_stages(), "executor: the process layout has ",
             groups.layout().stages(), " stages, the schedule ", schedule.virtual_stages(), " virtual stages");
  if (options_.microbatches_per_batch <= 0) options_.microbatches_per_batch = schedule.microbatches;
  LOOM_CHECK(schedule.microbatches % options_.microbatches_per_batch == 0, "executor: ", schedule.microbatches,
             " micro-batches in the program are not whole batches of ", options_.microbatches_per_batch);
  LOOM_CHECK(options_.global_batch >= options_.microbatches_per_batch, "executor: global batch ",
             options_.global_batch, " is smaller than its ", options_.microbatches_per_batch, " micro-batches");
  for (int c = 0; c < schedule.chunks; ++c) {
    auto state = std::make_unique<ChunkState>();
    state->chunk = c;
    state->virtual_stage = schedule.virtual_stage(stage, c);
    state->chain = chunks[c];
    state->first = schedule.is_first(stage, c);
    state->last = schedule.is_last(stage, c);
    state->replica = replica_index(groups, state->virtual_stage);
    LOOM_CHECK(!state->last || loss_ != nullptr, "executor: the last virtual stage needs a loss layer");
    std::vector<Tensor> gradients;
    for (std::size_t b = 0; b < state->chain->size(); ++b) {
      state->block_gradients.emplace_back();
      for (const NamedParameter& p : state->chain->block(b).parameters()) {
        if (!p.parameter->trainable) continue;
        parameters_.push_back(p.parameter);
        state->block_gradients.back().push_back(static_cast<int>(gradients.size()));
        gradients.push_back(p.parameter->grad);
      }
    }
    comm::ReduceGroup& group = groups.replicas(state->virtual_stage);
    if (group.size() > 1 && !gradients.empty())
      bucketers_.push_back(std::make_unique<comm::GradientBucketer>(group, gradients, options_.buckets));
    else
      bucketers_.push_back(nullptr);
    chunks_.push_back(std::move(state));
  }
  // Versions: where each is used last, so stashed copies are dropped as soon as possible.
  const auto& program = schedule.programs.at(stage);
  for (std::size_t i = 0; i < program.size(); ++i)
    if (is_compute(program[i].op) && program[i].version >= 0) last_use_[program[i].version] = i;
}

Executor::~Executor() = default;

int Executor::batches_per_run() const { return schedule_.microbatches / options_.microbatches_per_batch; }

Executor::Rows Executor::rows_of(int virtual_stage, int microbatch, std::int64_t first_batch) const {
  const int per_batch = options_.microbatches_per_batch;
  Rows rows;
  rows.batch = first_batch + microbatch / per_batch;
  const comm::Range mb = comm::even_split(batch_rows_, per_batch, microbatch % per_batch);
  rows.microbatch_rows = mb.size();
  int replica = 0;
  for (const auto& p : groups_.positions())
    if (p.stage == virtual_stage) replica = p.replica;
  const comm::Range mine = comm::even_split(mb.size(), groups_.layout().replicas(virtual_stage), replica);
  rows.first = mb.begin + mine.begin;
  rows.count = mine.size();
  return rows;
}

void Executor::run_forward(ChunkState& chunk, MicrobatchState& state, bool save) {
  MemoryCategoryScope scope(MemoryCategory::activations);
  state.ctx.clear();
  state.ctx.training = true;
  state.ctx.seed = options_.seed;
  state.ctx.step = static_cast<std::uint64_t>(state.rows.batch);
  state.ctx.first_sample = state.rows.first;
  TensorList outputs = chunk.chain->forward(state.inputs, state.ctx);
  if (chunk.last) {
    state.loss_ctx.clear();
    state.loss_ctx.training = true;
    state.loss_ctx.seed = options_.seed;
    state.loss_ctx.step = state.ctx.step;
    state.loss_ctx.first_sample = state.rows.first;
    state.loss_ctx.loss_denominator =
        static_cast<double>(options_.global_batch) * static_cast<double>(options_.targets_per_sample);
    LOOM_CHECK(!outputs.empty(), "executor: the last stage produced no output");
    outputs = loss_->forward({outputs[0], state.targets}, state.loss_ctx);
  }
  if (!save) {
    state.ctx.clear();
    state.loss_ctx.clear();
  }
  state.outputs = std::move(outputs);
}

void Executor::read_rows(const ChunkState& chunk, MicrobatchState& state, const BatchReader& reader) {
  if (!chunk.first && !chunk.last) return;
  TensorList inputs;
  Tensor targets;
  reader({state.rows.batch, state.rows.first, state.rows.count, chunk.first, chunk.last}, inputs, targets);
  if (chunk.first) state.inputs = std::move(inputs);
  if (chunk.last) state.targets = std::move(targets);
}

void Executor::flush_links() {
  for (auto& chunk : chunks_) {
    if (!chunk->last) groups_.link(chunk->virtual_stage).flush();
    if (!chunk->first) groups_.link(chunk->virtual_stage - 1).flush();
    chunk->microbatches.clear();
  }
}

void Executor::forward(ChunkState& chunk, int microbatch, const BatchReader& reader) {
  MicrobatchState& state = chunk.microbatches[microbatch];
  read_rows(chunk, state, reader);
  run_forward(chunk, state, !options_.recompute);
  if (!options_.recompute) state.inputs.clear();
}

void Executor::backward(ChunkState& chunk, const Action& action, bool final_for_batch) {
  MicrobatchState& state = chunk.microbatches.at(action.microbatch);
  comm::GradientBucketer* bucketer = bucketers_[chunk.chunk].get();
  const bool mark = final_for_batch && bucketer != nullptr;
  auto mark_block = [&](std::size_t block) {
    for (int g : chunk.block_gradients[block]) bucketer->mark_ready(g);
  };
  if (starts_backward(action.op)) {
    if (options_.recompute) {
      run_forward(chunk, state, true);
      state.inputs.clear();
    }
    MemoryCategoryScope scope(MemoryCategory::workspace);
    TensorList grad = state.grad_outputs;
    if (chunk.last) {
      Tensor one = Tensor::full({}, 1.0, state.outputs.at(0).dtype(), state.outputs.at(0).device());
      grad = {loss_->backward({one}, state.loss_ctx).at(0)};
      state.loss_ctx.clear();
    }
    state.grad_outputs.clear();
    state.outputs.clear();
    Chain& chain = *chunk.chain;
    if (action.op == Op::Backward && mark) {
      for (std::size_t b = chain.size(); b-- > 0;) {
        grad = chain.block(b).backward(grad, state.ctx.child(b));
        mark_block(b);
      }
      state.ctx.clear();
    } else if (action.op == Op::Backward) {
      grad = chain.backward(grad, state.ctx);
    } else {
      grad = chain.backward_input(grad, state.ctx);
    }
    if (!chunk.first) state.grad_inputs = std::move(grad);  // the first chunk's input gradient goes nowhere
  } else {  // BW
    MemoryCategoryScope scope(MemoryCategory::workspace);
    Chain& chain = *chunk.chain;
    if (mark) {
      for (std::size_t b = chain.size(); b-- > 0;) {
        chain.block(b).backward_weight(state.ctx.child(b));
        mark_block(b);
      }
      state.ctx.clear();
    } else {
      chain.backward_weight(state.ctx);
    }
  }
  if (ends_backward(action.op)) state.ctx.clear();
}

void Executor::enter_version(int version) {
  if (version < 0 || version == newest_version_) return;
  LOOM_CHECK(version < newest_version_, "executor: action uses weight version ", version, " but only ",
             newest_version_, " exists yet");
  auto it = stashed_.find(version);
  LOOM_CHECK(it != stashed_.end(), "executor: weight version ", version, " was not stashed");
  newest_values_.clear();
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    newest_values_.push_back(parameters_[i]->value);
    parameters_[i]->value = it->second[i];
  }
}

void Executor::leave_version() {
  if (newest_values_.empty()) return;
  for (std::size_t i = 0; i < parameters_.size(); ++i) parameters_[i]->value = newest_values_[i];
  newest_values_.clear();
}

void Executor::stash_if_needed(std::size_t action_index) {
  // Before a STEP: keep the current weights if a later action still uses this version.
  auto it = last_use_.find(newest_version_);
  if (it == last_use_.end() || it->second <= action_index || stashed_.count(newest_version_)) return;
  MemoryCategoryScope scope(MemoryCategory::parameters);
  std::vector<Tensor> copy;
  for (Parameter* p : parameters_) copy.push_back(p->value.clone());
  stashed_[newest_version_] = std::move(copy);
}

double Executor::weight_checksum() {
  double total = 0;
  for (Parameter* p : parameters_) {
    const auto values = p->value.to_double_vector();
    for (std::size_t i = 0; i < values.size(); ++i) total += values[i] * static_cast<double>((i % 7) + 1);
  }
  return total;
}

StepResult Executor::run(std::int64_t first_batch, const BatchReader& reader) {
  const auto& program = schedule_.programs.at(stage_);
  batch_rows_ = options_.global_batch;
  StepResult result;
  result.holds_loss = std::any_of(chunks_.begin(), chunks_.end(), [](const auto& c) { return c->last; });
  result.loss_sums.assign(static_cast<std::size_t>(batches_per_run()), 0.0);
  newest_version_ = 0;

  // Which backward completes each chunk's gradients for an allreduce: the last B/BW before each AR.
  std::vector<char> final_backward(program.size(), 0);
  {
    std::vector<long> last_seen(chunks_.size(), -1);
    for (std::size_t i = 0; i < program.size(); ++i) {
      const Op op = program[i].op;
      if (ends_backward(op)) last_seen[program[i].chunk] = static_cast<long>(i);
      if (op == Op::AllReduce || i + 1 == program.size()) {
        for (long& seen : last_seen) {
          if (seen >= 0) final_backward[seen] = 1;
          seen = -1;
        }
      }
    }
  }

  // Rows of every micro-batch, and every receive posted before any compute.
  for (const Action& a : program) {
    if (!is_compute(a.op) && !is_communication(a.op)) continue;
    ChunkState& chunk = *chunks_.at(a.chunk);
    MicrobatchState& state = chunk.microbatches[a.microbatch];
    state.rows = rows_of(chunk.virtual_stage, a.microbatch, first_batch);
    if (a.op == Op::RecvActivation)
      state.activation_receive = groups_.link(chunk.virtual_stage - 1)
                                     .post_receive(comm::Direction::forward, a.microbatch, state.rows.microbatch_rows);
    if (a.op == Op::RecvGradient)
      state.gradient_receive = groups_.link(chunk.virtual_stage)
                                   .post_receive(comm::Direction::backward, a.microbatch, state.rows.microbatch_rows);
  }

  for (std::size_t i = 0; i < program.size(); ++i) {
    const Action& a = program[i];
    const double start = now_us();
    switch (a.op) {
      case Op::RecvActivation: {
        MicrobatchState& state = chunks_[a.chunk]->microbatches.at(a.microbatch);
        state.inputs = state.activation_receive.wait();
        break;
      }
      case Op::RecvGradient: {
        MicrobatchState& state = chunks_[a.chunk]->microbatches.at(a.microbatch);
        state.grad_outputs = state.gradient_receive.wait();
        break;
      }
      case Op::Forward:
      case Op::Backward:
      case Op::BackwardInput:
      case Op::BackwardWeight: {
        ChunkState& chunk = *chunks_[a.chunk];
        enter_version(a.version);
        if (record_weights_) weight_uses_.push_back({a, weight_checksum()});
        if (a.op == Op::Forward) {
          forward(chunk, a.microbatch, reader);
          if (chunk.last) {
            MicrobatchState& state = chunk.microbatches.at(a.microbatch);
            result.loss_sums.at(static_cast<std::size_t>(state.rows.batch - first_batch)) += state.outputs.at(0).item();
          }
        } else {
          backward(chunk, a, final_backward[i] != 0);
        }
        leave_version();
        if (a.version >= 0 && last_use_.count(a.version) && last_use_[a.version] == i) stashed_.erase(a.version);
        break;
      }
      case Op::SendActivation: {
        ChunkState& chunk = *chunks_[a.chunk];
        MicrobatchState& state = chunk.microbatches.at(a.microbatch);
        groups_.link(chunk.virtual_stage)
            .send(comm::Direction::forward, a.microbatch, state.outputs, state.rows.microbatch_rows);
        state.outputs.clear();
        break;
      }
      case Op::SendGradient: {
        ChunkState& chunk = *chunks_[a.chunk];
        MicrobatchState& state = chunk.microbatches.at(a.microbatch);
        groups_.link(chunk.virtual_stage - 1)
            .send(comm::Direction::backward, a.microbatch, state.grad_inputs, state.rows.microbatch_rows);
        state.grad_inputs.clear();
        break;
      }
      case Op::AllReduce:
        for (auto& bucketer : bucketers_)
          if (bucketer) bucketer->wait();
        break;
      case Op::Step:
        stash_if_needed(i);
        optimizer_step_();
        for (Parameter* p : parameters_) ops::fill(p->grad, 0.0);
        ++newest_version_;
        break;
    }
    if (observer_) observer_({a, stage_, start, now_us()});
  }
  flush_links();
  LOOM_CHECK(stashed_.empty(), "executor: ", stashed_.size(), " stashed weight versions outlived the run");
  return result;
}

void Executor::evaluate(std::int64_t batch, std::int64_t batch_size, const BatchReader& reader,
                        const OutputObserver& on_output) {
  LOOM_CHECK(batch_size >= options_.microbatches_per_batch, "evaluate: batch of ", batch_size, " rows for ",
             options_.microbatches_per_batch, " micro-batches");
  batch_rows_ = batch_size;
  // The forward actions of one batch, in this rank's program order.
  std::vector<Action> program;
  for (const Action& a : schedule_.programs.at(stage_))
    if ((a.op == Op::Forward || a.op == Op::RecvActivation || a.op == Op::SendActivation) &&
        a.microbatch < options_.microbatches_per_batch)
      program.push_back(a);
  for (const Action& a : program) {
    ChunkState& chunk = *chunks_.at(a.chunk);
    MicrobatchState& state = chunk.microbatches[a.microbatch];
    state.rows = rows_of(chunk.virtual_stage, a.microbatch, batch);
    if (a.op == Op::RecvActivation)
      state.activation_receive = groups_.link(chunk.virtual_stage - 1)
                                     .post_receive(comm::Direction::forward, a.microbatch, state.rows.microbatch_rows);
  }
  for (const Action& a : program) {
    ChunkState& chunk = *chunks_[a.chunk];
    MicrobatchState& state = chunk.microbatches.at(a.microbatch);
    if (a.op == Op::RecvActivation) {
      state.inputs = state.activation_receive.wait();
    } else if (a.op == Op::SendActivation) {
      groups_.link(chunk.virtual_stage)
          .send(comm::Direction::forward, a.microbatch, state.outputs, state.rows.microbatch_rows);
      state.outputs.clear();
    } else {
      read_rows(chunk, state, reader);
      MemoryCategoryScope scope(MemoryCategory::workspace);
      Context ctx;
      ctx.training = false;
      ctx.seed = options_.seed;
      ctx.step = static_cast<std::uint64_t>(batch);
      ctx.first_sample = state.rows.first;
      state.outputs = chunk.chain->forward(state.inputs, ctx);
      state.inputs.clear();
      if (chunk.last) {
        on_output(state.rows.first, state.outputs.at(0), state.targets);
        state.outputs.clear();
      }
    }
  }
  flush_links();
}

}  // namespace loom::schedule
