// Trainer: one run of pipelined training (see trainer.h).
#include <loom/runtime/trainer.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <thread>

#include <loom/comm/control.h>
#include <loom/comm/device_placement.h>
#include <loom/comm/parallel_layout.h>
#include <loom/comm/process_groups.h>
#include <loom/comm/mpi_session.h>
#include <loom/comm/detail/test_hooks.h>
#include <loom/comm/topology.h>
#include <loom/core/device_memory.h>
#include <loom/core/log.h>
#include <loom/core/ops.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>
#include <loom/planner/plan_file.h>
#include <loom/runtime/executor.h>
#include <loom/runtime/loss_scaler.h>
#include <loom/runtime/optimizer_step.h>
#include <loom/runtime/run_layout.h>
#include <loom/runtime/straggler.h>
#include <loom/runtime/trace_recorder.h>
#include <loom/runtime/tied_parameters.h>
#include <loom/runtime/training_checkpoint.h>
#include <loom/runtime/zero_shard.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/schedule_file.h>

#include "device_setup.h"
#include "memory_check.h"
#include "training_data.h"
#include "zero_checkpoint.h"

namespace loom::runtime {

namespace detail {
// The run, built from its layout (resolved once, before the state exists, and never changed) by
// the functions below, collectively over the world.
struct TrainerState {
  TrainerState(ResolvedConfig c, ModelSpec m, std::unique_ptr<TrainingData> d, RunLayout l)
      : config(std::move(c)), spec(std::move(m)), data(std::move(d)), layout(std::move(l)) {}

  const ResolvedConfig config;
  const ModelSpec spec;
  const std::unique_ptr<TrainingData> data;
  const RunLayout layout;
  std::unique_ptr<comm::ParallelLayout> parallel_layout;  // the layout's ranks, as comm places them
  std::unique_ptr<comm::ProcessGroups> groups;
  int stage = 0;
  Device device;               // where this rank computes
  std::vector<std::unique_ptr<Chain>> owned;
  std::vector<Chain*> chunks;
  LayerPtr loss;
  bool first_replica = false;  // replica 0 of every stage it holds: counts in the norm, writes checkpoints
  std::unique_ptr<OptimizerStep> optimizer;  // with the fp32 masters (bf16, fp16) and the loss scaler (fp16)
  CheckpointLayout checkpoint_layout;
  std::vector<NamedParameter> checkpoint_parameters;  // buffers too (BatchNorm statistics); masters
  std::vector<NamedParameter> resume_parameters;      // and the tied copies another stage's file holds
  std::unique_ptr<TiedParameters> ties;
  std::unique_ptr<comm::Communicator> zero_group;  // --zero 1: this stage's replicas
  std::unique_ptr<ZeroShard> zero_shard;           // --zero 1 with replicas: this replica's slice
  std::unique_ptr<Executor> executor;
  std::unique_ptr<TraceRecorder> trace;
  std::int64_t step = 0;        // optimizer steps done: the one step counter
  std::int64_t first_step = 0;  // where this Trainer started
  std::string resumed_from;     // the checkpoint directory it resumed from
  // What this rank's device reported last (device_memory_info), re-read at most once a second:
  // the metrics sample it, the steps of a small model are far shorter than a second.
  DeviceMemoryInfo device_memory;
  std::optional<Stopwatch> device_memory_age;
  StragglerDetector stragglers;  // each stage's replicas' busy times per step (none when cores are shared)
  std::string straggler_notice;  // why no rank is watched, empty when they are
};
}  // namespace detail

namespace {

// This rank's device (the physical node's local rank picks the GPU), every rank's placement, this
// rank's groups (each stage's gradient allreduce on NCCL or MPI) and rank 0's line saying how
// tensors move. Collective.
comm::DevicePlacement place_and_connect(detail::TrainerState& s, int rank) {
  const CommConfig& o = s.config.comm;
  const comm::Topology machine = comm::Topology::physical();
  s.device = resolve_device(o.device, machine.local_rank(rank));
  comm::DevicePlacement placement = comm::DevicePlacement::gather(machine, s.device);
  std::vector<std::vector<int>> virtual_ranks;
  for (int v = 0; v < s.layout.schedule.virtual_stages(); ++v)
    virtual_ranks.push_back(s.layout.ranks[static_cast<std::size_t>(s.layout.schedule.stage_of(v))]);
  s.parallel_layout = std::make_unique<comm::ParallelLayout>(comm::ParallelLayout::from_table(virtual_ranks));
  const detail::CommPlan plan =
      detail::plan_communication(o.reduce_backend, o.boundary_backend, s.device, *s.parallel_layout, placement);
  if (rank == 0 && !s.device.is_cpu()) spdlog::info("{}", plan.line);
  s.groups = std::make_unique<comm::ProcessGroups>(*s.parallel_layout, comm::Topology::detect(o.ranks_per_node), plan.reduce,
                                                   s.device, plan.boundaries);
  return placement;
}

// This rank's model chunks (built, initialised on the host, moved to the device), the loss, and
// what its checkpoints hold.
void build_chunks(detail::TrainerState& s, std::vector<NamedParameter>& trainable) {
  const OptimizerConfig& optimizer = s.config.optimizer;
  s.checkpoint_layout = {.model = s.spec.name,
                         .settings = s.spec.settings,
                         .stage = s.stage,
                         .stages = s.layout.stages(),
                         .chunks = s.layout.chunks(),
                         .blocks = {},  // below, with the chunks
                         .global_batch = s.layout.global_batch,
                         .seed = s.config.seed,
                         .optimizer = std::string(optimizer_kind_name(optimizer.kind)),
                         .lr_schedule = optimizer.lr_schedule,
                         .total_steps = s.layout.steps,
                         .lr = optimizer.lr,
                         .precision = s.config.precision.precision,
                         .stage_blocks = {},
                         .replicas = {}};
  for (int c = 0; c < s.layout.chunks(); ++c) {
    const auto blocks = s.layout.chunk_blocks(s.stage, c);
    s.owned.push_back(s.spec.build(blocks.first, blocks.second));
    s.owned.back()->initialize(s.config.seed);  // on the host (the same bits on every device), then moved
    s.owned.back()->to(s.device);
    s.chunks.push_back(s.owned.back().get());
    s.checkpoint_layout.blocks.push_back(blocks);
    for (const NamedParameter& p : trainable_parameters(*s.chunks.back())) trainable.push_back(p);
    for (const NamedParameter& p : s.chunks.back()->parameters()) s.checkpoint_parameters.push_back(p);
  }
  for (int st = 0; st < s.layout.stages(); ++st) {  // the whole layout, for the manifest
    s.checkpoint_layout.replicas.push_back(static_cast<int>(s.layout.ranks.at(static_cast<std::size_t>(st)).size()));
    s.checkpoint_layout.stage_blocks.emplace_back();
    for (int c = 0; c < s.layout.chunks(); ++c)
      s.checkpoint_layout.stage_blocks.back().push_back(
          s.layout.chunk_blocks(st, c));
  }
  s.loss = s.spec.make_loss();
  s.loss->to(s.device);
}

// The executor of this rank's program, with the optimizer's step as its STEP action.
void build_executor(detail::TrainerState& s) {
  const ResolvedConfig& o = s.config;
  ExecutorOptions eo;
  eo.global_batch = s.layout.global_batch;
  eo.runner.seed = o.seed;
  eo.targets_per_sample = s.spec.targets_per_sample;
  eo.count_targets = s.spec.data.task == TokenTask::masked && s.spec.data.input_dtype == DType::i64;
  eo.runner.recompute.all = o.recompute;  // --recompute: every block; a plan: its stage's blocks
  if (!s.layout.recompute.empty())
    eo.runner.recompute.blocks = s.layout.recompute.at(static_cast<std::size_t>(s.stage));
  eo.runner.precision = o.precision.precision;
  eo.device = s.device;
  eo.buckets.bucket_bytes = static_cast<std::int64_t>(o.comm.bucket_mb * 1024 * 1024);
  eo.buckets.algorithm = o.comm.allreduce;
  eo.buckets.op = comm::ReduceOp::sum;  // losses are already divided by the global batch
  eo.zero = s.zero_shard.get();
  s.executor = std::make_unique<Executor>(s.layout.schedule, s.stage, *s.groups, s.chunks, s.loss.get(),
                                          std::bind_front(&OptimizerStep::step, s.optimizer.get()), eo);
}

std::vector<NamedParameter> without(const std::vector<NamedParameter>& parameters, const std::set<std::string>& names) {
  std::vector<NamedParameter> kept;
  for (const NamedParameter& p : parameters)
    if (!names.count(p.name)) kept.push_back(p);
  return kept;
}

// The model's tied parameters on this rank (tied_parameters.h), collective: copies take their
// canonical's values; a copy that is the canonical's tensor leaves the optimizer's list and the
// checkpoint's.
void tie_parameters(detail::TrainerState& s, std::vector<NamedParameter>& trainable) {
  LOOM_CHECK(s.spec.ties.empty() || !s.layout.schedule.asynchronous(), "model ", s.spec.name, " ties its output projection ",
             "to the word embedding, which the asynchronous schedules (weight stashing) do not support: "
             "--set tie_embeddings=0 unties it");
  s.ties = std::make_unique<TiedParameters>(s.spec.ties, s.checkpoint_parameters, s.groups->world(), s.first_replica);
  s.ties->initialize();
  trainable = without(trainable, s.ties->shared());
  s.checkpoint_parameters = without(s.checkpoint_parameters, s.ties->shared());
}

// --zero 1 (collective over the world): this stage's replicas share out the optimizer state; a
// stage of one replica keeps it whole.
void shard_optimizer(detail::TrainerState& s, const std::vector<NamedParameter>& trainable, int replica) {
  if (!s.layout.zero) return;
  LOOM_CHECK(!s.layout.schedule.asynchronous(), "--zero 1 needs a synchronous schedule (its replicas step together), not ",
             s.layout.schedule.name);
  s.zero_group = s.groups->world().split(s.stage, replica);
  if (s.zero_group->size() == 1) return;
  s.zero_shard = std::make_unique<ZeroShard>(trainable, *s.zero_group);
  s.ties->shard(*s.zero_shard);
}

// This rank's groups, model chunks, optimizer, checkpoint and executor (collective).
void build(detail::TrainerState& s, int rank) {
  const ResolvedConfig& o = s.config;
  const comm::DevicePlacement placement = place_and_connect(s, rank);
  detail::check_memory_fits(optimizer_state_tensors(o.optimizer.kind, o.optimizer.momentum), s.spec, s.layout,
                            detail::memory_by_rank(s.groups->world(), s.device, placement));
  const auto positions = s.parallel_layout->positions(rank);
  LOOM_CHECK(!positions.empty(), "rank ", rank, " has no stage in the layout");
  s.stage = s.layout.schedule.stage_of(positions.front().stage);
  s.first_replica = std::all_of(positions.begin(), positions.end(), [](auto p) { return p.replica == 0; });

  std::vector<NamedParameter> trainable;
  build_chunks(s, trainable);
  tie_parameters(s, trainable);
  shard_optimizer(s, trainable, positions.front().replica);
  s.optimizer = std::make_unique<OptimizerStep>(o.optimizer, o.precision,
                                                std::move(trainable), s.layout.steps, &s.groups->world(),
                                                s.first_replica, s.zero_shard.get(), s.ties.get());
  s.resume_parameters = s.optimizer->checkpointed(s.checkpoint_parameters);
  s.checkpoint_parameters = without(s.resume_parameters, s.ties->copies());
  build_executor(s);
  if (!o.trace.empty()) {
    if (rank == 0) {  // a path that cannot be written is an error now, not after the run
      std::ofstream probe(o.trace);
      LOOM_CHECK(static_cast<bool>(probe), "--trace ", o.trace, ": cannot write: ", std::strerror(errno));
    }
    s.trace = std::make_unique<TraceRecorder>(rank, s.layout.chunks() > 1);
    s.executor->set_event_observer([trace = s.trace.get()](const ActionEvent& e) { trace->record(e); });
  }
}

void resume(detail::TrainerState& s) {
  const ResolvedConfig& o = s.config;
  const ResumePoint point = load_training_checkpoint(s.groups->world(), o.checkpoint.resume, s.checkpoint_layout,
                                                     s.resume_parameters, s.optimizer->optimizer(),
                                                     s.optimizer->scaler(), s.ties->renames(),
                                                     s.zero_shard ? s.zero_shard->offsets() : std::map<std::string, std::int64_t>{});
  s.optimizer->publish();  // the loaded masters, rounded for the layers
  s.checkpoint_layout.lr_start = resumed_schedule_start(point, o.optimizer.lr_schedule);
  s.optimizer->start_schedule_at(s.checkpoint_layout.lr_start);
  s.first_step = point.step;
  s.resumed_from = point.directory;
  LOOM_CHECK(s.first_step < s.layout.steps, point.directory, ": the checkpoint is after step ", s.first_step,
             ", but this run has ", s.layout.steps, " steps in all (give more --steps or --epochs)");
  const int window = s.layout.schedule.batches();
  LOOM_CHECK(s.first_step % window == 0, point.directory, ": the checkpoint is after step ", s.first_step, ", inside a ",
             window, "-step window of the asynchronous schedule");
  s.step = s.first_step;
}

// Every stage's peaks, each the maximum over the stage's replicas, and what its device reports
// (the least free memory over the replicas, the total), collective over the world: each rank fills
// its own stage's row of a stages x columns table, the rest zero, and the element-wise maximum over
// all ranks is the table of every stage. The peaks are those of the stage's device.
struct MeasuredStageMemory {
  std::vector<MemoryPeaks> peaks;
  std::vector<DeviceMemoryInfo> device;
};
const DeviceMemoryInfo& sampled_device_memory(detail::TrainerState& s) {
  if (!s.device_memory_age || s.device_memory_age->elapsed_ms() >= 1000) {
    s.device_memory = device_memory_info(s.device);
    s.device_memory_age.emplace();
  }
  return s.device_memory;
}
MeasuredStageMemory stage_memory(comm::Communicator& world, Device device, const DeviceMemoryInfo& info, int stage, int stages) {
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max() / 2;  // kNone - free: the maximum is the least free
  const MemoryStats stats = memory_stats(device);
  const std::size_t width = kMemoryCategoryCount + 3;
  std::vector<std::int64_t> table(width * static_cast<std::size_t>(stages), 0);
  std::int64_t* row = table.data() + width * static_cast<std::size_t>(stage);
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) row[c] = stats.peak_by_category[c];
  row[kMemoryCategoryCount] = stats.peak_bytes;
  row[kMemoryCategoryCount + 1] = kNone - info.free_bytes;
  row[kMemoryCategoryCount + 2] = info.total_bytes;
  table = comm::max_over(world, std::move(table));
  MeasuredStageMemory memory;
  for (std::size_t s = 0; s < static_cast<std::size_t>(stages); ++s) {
    const std::int64_t* got = table.data() + s * width;
    memory.peaks.emplace_back();
    std::copy_n(got, kMemoryCategoryCount + 1, memory.peaks.back().begin());
    memory.device.push_back({kNone - got[kMemoryCategoryCount + 1], got[kMemoryCategoryCount + 2], info.host});
  }
  return memory;
}

// Every rank's busy seconds per step of this run (the run's busy time over its batches), collective
// over the world: each rank fills its own entry and the sum is the table.
std::vector<double> rank_busy_seconds(comm::Communicator& world, const StepResult& result, int batches) {
  std::vector<double> busy(static_cast<std::size_t>(world.size()), 0.0);
  busy[static_cast<std::size_t>(world.rank())] = comm::test_busy_seconds().value_or(result.busy_seconds / batches);
  world.allreduce(busy.data(), static_cast<std::int64_t>(busy.size()), DType::f64);
  return busy;
}

// The straggler watch (straggler.h): each stage's replicas compared, unless some node's ranks share
// its cores (an oversubscribed job), which the notice then says.
void watch_stragglers(detail::TrainerState& s) {
  comm::Communicator& world = s.groups->world();
  const std::string here =
      cores_shared(std::max(1, local_rank_count()), num_threads(), static_cast<int>(std::thread::hardware_concurrency()));
  double shared = here.empty() ? 0 : 1;
  world.allreduce(&shared, 1, DType::f64);
  if (shared > 0) {
    s.straggler_notice = here.empty() ? "the ranks of another node share its cores" : here;
    return;
  }
  std::vector<int> stage_of_rank(static_cast<std::size_t>(world.size()), -1);
  for (std::size_t stage = 0; stage < s.layout.ranks.size(); ++stage)
    for (const int rank : s.layout.ranks[stage]) stage_of_rank.at(static_cast<std::size_t>(rank)) = static_cast<int>(stage);
  s.stragglers = StragglerDetector(stage_of_rank);
}

// The maximum over stages of each entry: the peak of the fullest rank.
MemoryPeaks max_over_stages(const std::vector<MemoryPeaks>& stages) {
  MemoryPeaks peaks{};
  for (const MemoryPeaks& stage : stages)
    for (std::size_t c = 0; c < peaks.size(); ++c) peaks[c] = std::max(peaks[c], stage[c]);
  return peaks;
}

}  // namespace

Trainer::Trainer(const TrainerConfig& config) : Trainer(resolve_config(config)) {}

Trainer::Trainer(ResolvedConfig config)
    : Trainer(config, make_model(config.model, config.overrides, parse_model_size(config.size))) {}

Trainer::Trainer(const TrainerConfig& config, ModelSpec model) : Trainer(resolve_config(config), std::move(model)) {}

Trainer::Trainer(ResolvedConfig config, ModelSpec model) {
  comm::ensure_mpi();
  comm::check_test_hooks();
  set_num_threads(config.threads > 0 ? config.threads : default_num_threads());
  const bool with_test = model.data.target_shape.rank() == 0 && config.epochs > 0;  // classification by epochs
  auto data = std::make_unique<detail::TrainingData>(config.data, config.seed, model, with_test);
  RunLayout layout = resolve_run_layout(config, model, comm::world_size(), data->train_size());
  state_ = std::make_unique<detail::TrainerState>(std::move(config), std::move(model), std::move(data),
                                                  std::move(layout));
  build(*state_, comm::world_rank());
  if (!state_->config.checkpoint.resume.empty()) resume(*state_);
  watch_stragglers(*state_);
}

Trainer::~Trainer() = default;

TrainSummary Trainer::run(const TrainerHooks& hooks) {
  detail::TrainerState& s = *state_;
  comm::Communicator& world = s.groups->world();
  TrainSummary summary;
  const LossScaler* scaler = s.optimizer->scaler();
  const CheckpointConfig& checkpoint = s.config.checkpoint;
  reset_peak_memory();
  if (!s.device.is_cpu()) reset_peak_memory(s.device);
  Stopwatch total;
  while (s.step < s.layout.steps) {
    const std::int64_t run_first = s.step;
    LOOM_CHECK(s.layout.steps - s.step >= s.layout.schedule.batches(), "internal: partial window");
    StepResult result = s.executor->run(s.step, s.data->train_reader(s.layout.global_batch), s.optimizer->loss_scale());
    world.allreduce(result.loss_sums.data(), static_cast<std::int64_t>(result.loss_sums.size()), DType::f64);
    const MeasuredStageMemory memory = stage_memory(world, s.device, sampled_device_memory(s), s.stage, s.layout.stages());
    const MemoryPeaks peaks = max_over_stages(memory.peaks);
    const std::vector<double> busy = rank_busy_seconds(world, result, s.layout.schedule.batches());
    for (double loss : result.loss_sums) {
      LOOM_CHECK(std::isfinite(loss), "step ", s.step + 1, ": the global-batch loss is ", loss,
                 "; training diverged (lower --lr, warm up with --warmup-steps, or clip with --clip-norm)");
      summary.losses.push_back(loss);
      summary.samples += s.layout.global_batch;
      ++s.step;
      std::vector<int> stragglers = s.stragglers.observe(busy);
      if (hooks.on_step)
        hooks.on_step({s.step, loss, s.optimizer->learning_rate(s.step - 1), peaks, memory.peaks, memory.device,
                       scaler ? scaler->last_scale() : 1.0, scaler && scaler->last_skipped(), busy,
                       std::move(stragglers), s.stragglers.references()});
    }
    if (s.data->has_test() && s.step % s.layout.steps_per_epoch == 0) {
      const std::int64_t epoch = s.step / s.layout.steps_per_epoch;
      summary.test_accuracy.push_back(evaluate(epoch));
      if (hooks.on_epoch) hooks.on_epoch({epoch, summary.test_accuracy.back()});
    }
    // At the end, and whenever this run crossed a multiple of checkpoint_every.
    const std::int64_t every = checkpoint.every;
    const bool crossed = every > 0 && s.step / every > run_first / every;
    if (!checkpoint.dir.empty() && (crossed || s.step == s.layout.steps)) {
      std::optional<StageTensors> gathered;  // --zero 1: the slices, whole (collective over the replicas)
      if (s.zero_shard) s.zero_shard->wait_gather();
      if (s.zero_shard) gathered = detail::gather_stage_tensors(*s.zero_shard, *s.optimizer, s.checkpoint_parameters);
      const std::string saved =
          save_training_checkpoint(world, checkpoint.dir, s.checkpoint_layout, s.step, s.checkpoint_parameters,
                                   s.optimizer->optimizer(), s.first_replica, checkpoint.keep, scaler,
                                   gathered ? &*gathered : nullptr);
      if (hooks.on_checkpoint) hooks.on_checkpoint({saved, s.step});
    }
  }
  if (s.zero_shard) s.zero_shard->wait_gather();  // the caller may read the weights
  summary.seconds = total.elapsed_ms() / 1000.0;
  summary.peak_activation_bytes = memory_stats(s.device).peak(MemoryCategory::activations);
  if (s.trace) s.trace->write(world, *s.parallel_layout, s.layout.stages(), s.config.trace);
  return summary;
}

double Trainer::evaluate(std::int64_t epoch) {
  detail::TrainerState& s = *state_;
  if (s.zero_shard) s.zero_shard->wait_gather();  // the weights the last step updated, whole
  LOOM_CHECK(s.spec.data.target_shape.rank() == 0, "evaluate: model ", s.spec.name,
             " is not a classifier (test accuracy needs class labels)");
  s.data->open_test(s.spec);
  std::int64_t counts[2] = {0, 0};  // correct, seen
  const std::int64_t n = s.data->test_size(), batch = s.layout.global_batch;
  for (std::int64_t start = 0; start < n; start += batch) {
    const std::int64_t rows = std::min(batch, n - start);
    if (rows < s.layout.schedule.microbatches_per_batch()) break;
    s.executor->evaluate(epoch, rows, s.data->test_reader(start), [&](std::int64_t, const Tensor& logits, const Tensor& labels) {
      Tensor predicted;
      ops::max(logits.to(Device::cpu()), -1, &predicted);
      const auto p = predicted.span<std::int64_t>();
      const Tensor host_labels = labels.to(Device::cpu());
      const auto y = host_labels.span<std::int64_t>();
      for (std::size_t i = 0; i < p.size(); ++i) counts[0] += p[i] == y[i];
      counts[1] += static_cast<std::int64_t>(p.size());
    });
  }
  s.groups->world().allreduce(counts, 2, DType::i64);
  return counts[1] > 0 ? static_cast<double>(counts[0]) / static_cast<double>(counts[1]) : 0.0;
}

const ResolvedConfig& Trainer::config() const { return state_->config; }
const RunLayout& Trainer::layout() const { return state_->layout; }
const ModelSpec& Trainer::model() const { return state_->spec; }
std::int64_t Trainer::step() const { return state_->step; }
std::int64_t Trainer::first_step() const { return state_->first_step; }
const std::string& Trainer::resumed_from() const { return state_->resumed_from; }
const LrSchedule& Trainer::lr_schedule() const { return state_->optimizer->schedule(); }
int Trainer::stage() const { return state_->stage; }
int Trainer::stage_of_rank(int rank) const {
  return state_->layout.stage_of_rank(rank);
}
const std::string& Trainer::straggler_notice() const { return state_->straggler_notice; }
const StragglerRule& Trainer::straggler_rule() const { return state_->stragglers.rule(); }
Device Trainer::device() const { return state_->device; }
const std::vector<Chain*>& Trainer::chunks() const { return state_->chunks; }
std::pair<int, int> Trainer::scattered_buckets() const { return state_->executor->scattered_buckets(); }
comm::ProcessGroups& Trainer::groups() { return *state_->groups; }

namespace {

// "stage 0: ranks 0 1", with ", chunks 0 and 3" where the stage holds several virtual stages.
std::string stage_text(const RunLayout& r, int stage) {
  const std::vector<int>& ranks = r.ranks.at(static_cast<std::size_t>(stage));
  std::string text = loom::detail::concat("stage ", stage, ": rank", ranks.size() > 1 ? "s" : "");
  for (const int rank : ranks) text += " " + std::to_string(rank);
  if (r.chunks() == 1) return text;
  text += ", chunks";
  for (int c = 0; c < r.chunks(); ++c)
    text += (c == 0 ? " " : c + 1 == r.chunks() ? " and " : ", ") + std::to_string(r.schedule.virtual_stage(stage, c));
  return text;
}

// "2 stages x 2 replicas (stage 0: ranks 0 1 | stage 1: ranks 2 3)"; uneven replicas (a plan's)
// are in the list only.
std::string stages_text(const RunLayout& r) {
  const std::size_t replicas = r.ranks.front().size();
  const bool even = std::all_of(r.ranks.begin(), r.ranks.end(), [&](const auto& ranks) { return ranks.size() == replicas; });
  std::string text = loom::detail::concat(r.stages(), r.stages() > 1 ? " stages" : " stage");
  if (even && replicas > 1) text += loom::detail::concat(" x ", replicas, " replicas");
  text += " (";
  for (int stage = 0; stage < r.stages(); ++stage) text += (stage ? " | " : "") + stage_text(r, stage);
  return text + ")";
}

}  // namespace

std::string Trainer::describe() const {
  const detail::TrainerState& s = *state_;
  const RunLayout& r = s.layout;
  const ResolvedConfig& c = s.config;
  const bool pipedream = r.schedule.kind == schedule::ScheduleKind::pipedream;
  const Precision precision = c.precision.precision;
  const bool preset = !c.size.empty() && c.model == s.spec.name;
  return loom::detail::concat(
      s.spec.describe(), preset ? " | size " + c.size : "", " | data ", c.data, " (", r.train_samples, " samples) | ",
      stages_text(r), c.pipeline.plan.empty() ? "" : " | plan " + c.pipeline.plan, " | schedule ",
      r.schedule_file.empty() ? std::string(schedule::schedule_kind_name(r.schedule.kind)) : "file " + r.schedule_file,
      pipedream ? std::string(" | whole minibatches (no micro-batches)") : loom::detail::concat(" | M=", r.microbatches()),
      " | B=", r.global_batch, " | ", r.steps, r.steps == 1 ? " step | " : " steps | ", optimizer_kind_name(c.optimizer.kind), ", ",
      s.optimizer->schedule().describe(), r.zero ? " | ZeRO-1" : "",
      precision != Precision::fp32 ? std::string(" | ") + precision_name(precision) : "", " | ", num_threads(),
      num_threads() > 1 ? " threads" : " thread");
}

}  // namespace loom::runtime
