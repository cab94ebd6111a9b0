// The run's layout, resolved once (see run_layout.h).
#include <loom/runtime/run_layout.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>
#include <memory>
#include <optional>

#include <loom/comm/parallel_layout.h>
#include <loom/comm/range_split.h>
#include <loom/base/error.h>
#include <loom/planner/plan_file.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/schedule_file.h>

namespace loom::runtime {

namespace {

// The pipeline's shape before the programs: from the flags, a plan or a schedule file.
struct Pipeline {
  schedule::ScheduleKind kind = schedule::ScheduleKind::dapple;
  int microbatches = 1;
  int chunks = 1;
  std::int64_t global_batch = 1;
  bool zero = false;
  std::optional<schedule::Schedule> file;  // --schedule-file's programs
};

// --stages x --replicas ranks in order; stage s of S gets blocks even_split(blocks, S * chunks, v) for
// each of its virtual stages v.
void cut_from_config(RunLayout& r, const PipelineConfig& o, int stages, const ModelSpec& spec, int world, int chunks) {
  LOOM_CHECK(stages >= 1 && o.replicas >= 1, "--stages and --replicas must be at least 1");
  const std::int64_t needed = static_cast<std::int64_t>(stages) * o.replicas;  // no int overflow
  LOOM_CHECK(world == needed, "--stages ", stages, " x --replicas ", o.replicas, " needs ", needed,
             needed == 1 ? " rank" : " ranks", ", but this job has ", world, ": start it with mpirun -np ", needed,
             " (or srun -n ", needed, "), or give --stages and --replicas whose product is ", world);
  const comm::ParallelLayout layout = comm::ParallelLayout::uniform(stages, o.replicas);
  for (int s = 0; s < stages; ++s) r.ranks.push_back(layout.stage_ranks(s));
  const int virtual_stages = stages * chunks;
  LOOM_CHECK(spec.blocks() >= virtual_stages, "model ", spec.name, " has ", spec.blocks(), " blocks, too few for ",
             virtual_stages, chunks > 1 ? " virtual stages" : " stages",
             " (use --set to make it deeper, or fewer stages)");
  for (int v = 0; v < virtual_stages; ++v) {
    const comm::Range range = comm::even_split(spec.blocks(), virtual_stages, v);
    r.blocks.emplace_back(range.begin, range.end);
  }
}

// The plan's chunk ranges in their virtual stages (planner::virtual_stage_layers: the placement of
// its schedule kind), its ranks and its per-stage recomputation.
void cut_from_plan(RunLayout& r, const planner::Plan& plan, const std::string& path, const ModelSpec& spec, int world) {
  std::int64_t expected_first = 0;
  const std::vector<planner::LayerRange> ranges = planner::virtual_stage_layers(plan, planner::plan_schedule(plan));
  for (std::size_t v = 0; v < ranges.size(); ++v) {
    const auto [first, last] = ranges[v];
    LOOM_CHECK(first == expected_first && last >= first, path, ": virtual stage ", v, " covers layers [", first, ", ",
               last, "], expected it to start at ", expected_first);
    r.blocks.emplace_back(first, last + 1);
    expected_first = last + 1;
  }
  int needed = 0;  // the ranks the plan places stages on
  for (const planner::StagePlan& stage : plan.stages)
    for (int rank : stage.devices) needed = std::max(needed, rank + 1);
  for (int s = 0; s < plan.stage_count(); ++s) {
    const planner::StagePlan& stage = plan.stages[static_cast<std::size_t>(s)];
    for (int rank : stage.devices)
      LOOM_CHECK(rank >= 0 && rank < world, path, ": stage ", s, " uses rank ", rank, ", but this job has ", world,
                 " ranks: the plan needs ", needed, " (mpirun -np ", needed, "), or make a plan for ", world,
                 " devices (loom plan --cluster ...)");
    r.ranks.push_back(stage.devices);
    r.recompute.emplace_back(stage.recompute.begin(), stage.recompute.end());
    if (stage.predicted_peak_bytes >= 0) r.predicted_peak_bytes.push_back(stage.predicted_peak_bytes);
  }
  if (static_cast<int>(r.predicted_peak_bytes.size()) != plan.stage_count()) r.predicted_peak_bytes.clear();
  r.planned_device_memory = plan.assumptions.device_memory_bytes;
  r.plan_file = path;
  LOOM_CHECK(plan.tensor_parallel == 1, path, ": tensor_parallel ", plan.tensor_parallel,
             ": this loom runs tensor_parallel 1 only; make the plan again with loom plan");
  LOOM_CHECK(expected_first == spec.blocks(), path, ": the plan covers ", expected_first, " layers but model ",
             spec.name, " has ", spec.blocks(), " blocks (was the plan made for another model or size?)");
  int used = 0;
  for (const auto& ranks : r.ranks) used += static_cast<int>(ranks.size());
  LOOM_CHECK(used == world, path, ": the plan uses ", used, " ranks, but this job has ", world, ": start it with mpirun -np ",
             used, ", or make a plan for ", world, " devices (loom plan --cluster ...)");
}

// --schedule-file: the programs, stages, chunks and M from the file (the flags given must agree with
// it), replicas = ranks / stages, the blocks split evenly over the file's virtual stages.
schedule::Schedule read_file(const ResolvedConfig& config, int world) {
  const PipelineConfig& o = config.pipeline;
  LOOM_CHECK(o.microbatches >= 0, "--microbatches must be at least 1 (or 0: the file's), got ", o.microbatches);
  LOOM_CHECK(o.stages >= 0 && o.chunks >= 0, "--stages and --chunks must be at least 1 (or 0: the file's), got ",
             o.stages, " and ", o.chunks);
  schedule::ScheduleFileFlags given{o.stages, o.chunks, o.microbatches, o.schedule, o.warmup};
  schedule::Schedule file = schedule::load_schedule_file(o.schedule_file, given);
  LOOM_CHECK(!file.asynchronous() && file.batches() == 1, o.schedule_file,
             ": asynchronous schedules (weight versions, several STEPs) cannot run from a file yet");
  LOOM_CHECK(world % file.stages == 0, o.schedule_file, " has ", file.stages, " stages, but this job has ", world,
             " ranks: start it with a multiple of ", file.stages, " (mpirun -np ", file.stages,
             " for one replica per stage)");
  return file;
}

// The schedule kind, micro-batches, global batch, chunks and the cut, from the flags, the plan file
// or the schedule file.
Pipeline resolve_pipeline(RunLayout& r, const ResolvedConfig& config, const ModelSpec& spec, int world) {
  const PipelineConfig& o = config.pipeline;
  Pipeline p{o.schedule.value_or(schedule::ScheduleKind::dapple), o.microbatches, 1, o.global_batch,
             config.optimizer.zero == 1, std::nullopt};
  if (!o.schedule_file.empty()) {
    p.file = read_file(config, world);
    PipelineConfig from_file = o;
    from_file.replicas = world / p.file->stages;
    cut_from_config(r, from_file, p.file->stages, spec, world, p.file->chunks);
    return p;
  }
  std::unique_ptr<planner::Plan> plan;
  if (!o.plan.empty()) {
    plan = std::make_unique<planner::Plan>(planner::read_plan(o.plan));
    LOOM_CHECK(plan->model.empty() || plan->model == spec.name, o.plan, ": the plan is for model '", plan->model,
               "', not '", spec.name, "'");
    p.microbatches = plan->microbatches;
    p.global_batch = plan->global_batch > 0 ? plan->global_batch : o.global_batch;
    p.kind = plan->schedule;
    p.zero = p.zero || plan->zero == 1;  // the plan's ZeRO-1 (as --zero 1)
  }
  LOOM_CHECK(p.microbatches >= 1, "--microbatches must be at least 1, got ", p.microbatches);
  LOOM_CHECK(config.precision.precision != Precision::fp16 || !schedule::is_asynchronous(p.kind),
             "--precision fp16 needs a synchronous schedule (", schedule::schedule_kind_list(", ", false), "), not ",
             schedule::schedule_kind_name(p.kind), ": its loss scaling skips whole steps on every rank (use --precision bf16)");
  p.chunks = plan ? plan->chunks : schedule::is_multi_chunk(p.kind) ? o.chunks : 1;
  LOOM_CHECK(!schedule::is_v_shaped(p.kind) || p.chunks == 2, "--schedule ", schedule::schedule_kind_name(p.kind),
             " places 2 chunks per rank in a V, not --chunks ", p.chunks);
  if (plan)
    cut_from_plan(r, *plan, o.plan, spec, world);
  else
    cut_from_config(r, o, o.stages, spec, world, p.chunks);
  return p;
}

// The kind's generator's programs (asynchronous ones over their window: one epoch, or all steps).
schedule::Schedule make_programs(const RunLayout& r, const Pipeline& p, const ResolvedConfig& config) {
  const std::int64_t window =
      schedule::is_asynchronous(p.kind) ? (config.epochs > 0 ? r.steps_per_epoch : r.steps) : 1;
  LOOM_CHECK(window <= kMaxAsyncWindow, "--schedule ", schedule::schedule_kind_name(p.kind), " runs its ", window,
             " minibatches as one schedule without a flush, more than the ", kMaxAsyncWindow,
             " it holds in memory: use --epochs (one window per epoch) or fewer --steps");
  schedule::ScheduleOptions so;
  so.stages = static_cast<int>(r.ranks.size());
  so.microbatches = p.kind == schedule::ScheduleKind::pipedream ? static_cast<int>(window) : p.microbatches;
  so.minibatches = static_cast<int>(window);
  so.chunks = p.chunks;
  so.warmup = config.pipeline.warmup;
  return schedule::make_schedule(p.kind, so);
}

// What would split `global_batch` into whole micro-batches: the nearest multiples of `per_batch`
// and the divisors of the batch nearest `per_batch`.
std::string batch_split_fix(std::int64_t global_batch, int per_batch) {
  const std::int64_t below = global_batch / per_batch * per_batch, above = below + per_batch;
  std::vector<std::int64_t> divisors;
  for (std::int64_t d = 2; d <= std::min<std::int64_t>(global_batch, 4 * per_batch); ++d)
    if (global_batch % d == 0) divisors.push_back(d);
  std::sort(divisors.begin(), divisors.end(), [&](std::int64_t a, std::int64_t b) {
    return std::abs(a - per_batch) < std::abs(b - per_batch) || (std::abs(a - per_batch) == std::abs(b - per_batch) && a < b);
  });
  divisors.resize(std::min<std::size_t>(divisors.size(), 3));
  std::sort(divisors.begin(), divisors.end());
  std::string fix = "use --global-batch " + (below > 0 ? std::to_string(below) + " or " : "") + std::to_string(above);
  for (std::size_t i = 0; i < divisors.size(); ++i)
    fix += (i == 0 ? ", or --microbatches " : i + 1 == divisors.size() ? " or " : ", ") + std::to_string(divisors[i]);
  return fix;
}

// The global batch splits into the schedule's micro-batches, and each into the stage's replicas.
void check_batch_split(const RunLayout& r) {
  const int per_batch = r.microbatches();
  LOOM_CHECK(r.global_batch % per_batch == 0, "--global-batch ", r.global_batch, " is not divisible by ", per_batch,
             " micro-batches: ", batch_split_fix(r.global_batch, per_batch));
  for (std::size_t st = 0; st < r.ranks.size(); ++st)
    LOOM_CHECK(r.global_batch / per_batch >= static_cast<std::int64_t>(r.ranks[st].size()), "a micro-batch of ",
               r.global_batch / per_batch, " samples cannot be split over the ", r.ranks[st].size(),
               " replicas of stage ", st);
}

}  // namespace

std::pair<std::int64_t, std::int64_t> RunLayout::chunk_blocks(int stage, int chunk) const {
  return blocks.at(static_cast<std::size_t>(schedule.virtual_stage(stage, chunk)));
}

int RunLayout::stage_of_rank(int rank) const {
  for (std::size_t s = 0; s < ranks.size(); ++s)
    if (std::find(ranks[s].begin(), ranks[s].end(), rank) != ranks[s].end()) return static_cast<int>(s);
  LOOM_THROW("rank ", rank, " is in no pipeline stage of this run");
}

RunLayout resolve_run_layout(const ResolvedConfig& config, const ModelSpec& spec, int world, std::int64_t train_samples) {
  RunLayout r;
  const Pipeline p = resolve_pipeline(r, config, spec, world);
  r.schedule_file = config.pipeline.schedule_file;
  r.global_batch = p.global_batch;
  r.zero = p.zero;
  r.train_samples = train_samples;
  r.steps_per_epoch = train_samples / p.global_batch;
  LOOM_CHECK(r.steps_per_epoch >= 1, config.data, ": ", train_samples, " samples, fewer than one global batch of ",
             p.global_batch);
  LOOM_CHECK(config.epochs <= kMaxSteps / r.steps_per_epoch, "--epochs ", config.epochs, " x ", r.steps_per_epoch,
             " steps per epoch is more than ", kMaxSteps, " steps");
  r.steps = config.steps > 0 ? config.steps : config.epochs * r.steps_per_epoch;
  r.schedule = p.file ? *p.file : make_programs(r, p, config);
  check_batch_split(r);
  return r;
}

}  // namespace loom::runtime
