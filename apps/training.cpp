// `loom train` (see training.h): layout, model partition, schedule, executor loop, reporting.
#include "training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <unistd.h>

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <loom/comm/parallel_layout.h>
#include <loom/comm/partition.h>
#include <loom/comm/process_groups.h>
#include <loom/comm/runtime.h>
#include <loom/comm/topology.h>
#include <loom/core/log.h>
#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>
#include <loom/models/dataset.h>
#include <loom/models/model.h>
#include <loom/planner/plan_file.h>
#include <loom/schedule/executor.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/trace.h>
#include <loom/schedule/validator.h>

#include "optimizer_setup.h"
#include "train_checkpoint.h"

namespace loom::apps {

namespace {

bool is_asynchronous(const std::string& kind) { return kind == "pipedream" || kind == "pipedream-2bw"; }

// Stage s of S gets blocks even_split(blocks, S, s) unless a plan says otherwise.
struct Partition {
  int stages = 1;                               // physical stages S
  std::vector<std::vector<int>> ranks;          // ranks[stage][replica]
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;  // per virtual stage: [first, last)
};

Partition partition_from_options(const TrainOptions& o, const ModelSpec& spec, int world, int virtual_per_stage) {
  Partition p;
  LOOM_CHECK(o.stages >= 1 && o.replicas >= 1, "--stages and --replicas must be at least 1");
  LOOM_CHECK(world == o.stages * o.replicas, "mpirun started ", world, " ranks but --stages ", o.stages,
             " x --replicas ", o.replicas, " needs ", o.stages * o.replicas);
  p.stages = o.stages;
  const comm::ParallelLayout layout = comm::ParallelLayout::uniform(o.stages, o.replicas);
  for (int s = 0; s < o.stages; ++s) p.ranks.push_back(layout.stage_ranks(s));
  const int virtual_stages = o.stages * virtual_per_stage;
  LOOM_CHECK(spec.blocks() >= virtual_stages, "model ", spec.name, " has ", spec.blocks(), " blocks, too few for ",
             virtual_stages, virtual_per_stage > 1 ? " virtual stages" : " stages",
             " (use --set to make it deeper, or fewer stages)");
  for (int v = 0; v < virtual_stages; ++v) {
    const comm::Range r = comm::even_split(spec.blocks(), virtual_stages, v);
    p.blocks.emplace_back(r.begin, r.end);
  }
  return p;
}

Partition partition_from_plan(const planner::Plan& plan, const std::string& path, const ModelSpec& spec, int world) {
  Partition p;
  p.stages = plan.stage_count();
  std::int64_t expected_first = 0;
  for (int s = 0; s < p.stages; ++s) {
    const planner::StagePlan& stage = plan.stages[s];
    LOOM_CHECK(stage.first_layer == expected_first && stage.last_layer >= stage.first_layer, path, ": stage ", s,
               " covers layers [", stage.first_layer, ", ", stage.last_layer, "], expected it to start at ",
               expected_first);
    p.blocks.emplace_back(stage.first_layer, stage.last_layer + 1);
    expected_first = stage.last_layer + 1;
    std::vector<int> ranks = stage.devices;
    for (int r : ranks)
      LOOM_CHECK(r >= 0 && r < world, path, ": stage ", s, " uses rank ", r, " but mpirun started ", world, " ranks");
    p.ranks.push_back(ranks);
  }
  LOOM_CHECK(expected_first == spec.blocks(), path, ": the plan covers ", expected_first, " layers but model ",
             spec.name, " has ", spec.blocks(), " blocks (was the plan made for another model or size?)");
  int used = 0;
  for (const auto& r : p.ranks) used += static_cast<int>(r.size());
  LOOM_CHECK(used == world, path, ": the plan uses ", used, " ranks but mpirun started ", world);
  return p;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", bytes, units[u]);
  return text;
}

std::string format_duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return text;
}

// Peak bytes per category, the maximum over all ranks (what one device must hold).
std::array<std::int64_t, kMemoryCategoryCount + 1> world_peaks(MPI_Comm world) {
  const MemoryStats stats = memory_stats();
  std::array<std::int64_t, kMemoryCategoryCount + 1> local{}, global{};
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) local[c] = stats.peak_by_category[c];
  local[kMemoryCategoryCount] = stats.peak_bytes;
  MPI_Allreduce(local.data(), global.data(), static_cast<int>(local.size()), MPI_INT64_T, MPI_MAX, world);
  return global;
}

// Every rank's executed actions, gathered to rank 0 and written as one Chrome trace (a track per rank).
void write_trace(const std::string& path, const std::vector<schedule::TraceEvent>& events,
                 const comm::ParallelLayout& layout, int stages) {
  const int rank = comm::world_rank(), world = comm::world_size();
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& e : events)
    mine.push_back({e.name, e.category, e.start_ms, e.duration_ms, e.microbatch, e.chunk, e.version, e.stage});
  const std::string text = mine.dump();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(world)), offsets(static_cast<std::size_t>(world), 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (int r = 1; r < world; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(rank == 0 ? static_cast<std::size_t>(offsets.back() + lengths.back()) : 0, '\0');
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  schedule::Trace trace;
  for (int r = 0; r < world; ++r) {
    std::string name = "rank " + std::to_string(r);
    for (const auto& p : layout.positions(r))
      name += " (stage " + std::to_string(p.stage % stages) + ", replica " + std::to_string(p.replica) + ")";
    trace.track_names.push_back(name);
    for (const auto& e : nlohmann::json::parse(all.substr(static_cast<std::size_t>(offsets[r]),
                                                          static_cast<std::size_t>(lengths[r])))) {
      schedule::TraceEvent event;
      event.track = r;
      event.name = e[0];
      event.category = e[1];
      event.start_ms = e[2];
      event.duration_ms = e[3];
      event.microbatch = e[4];
      event.chunk = e[5];
      event.version = e[6];
      event.stage = e[7];
      trace.events.push_back(std::move(event));
    }
  }
  schedule::write_chrome_trace(trace, path);
}

}  // namespace

TrainSummary train(const TrainOptions& o, const std::function<void(const TrainedStage&)>& on_finish) {
  comm::ensure_mpi();
  const int rank = comm::world_rank(), world = comm::world_size();
  set_num_threads(o.threads > 0 ? o.threads : default_num_threads());

  // ---- validate what does not need the model ---------------------------------------------------
  LOOM_CHECK((o.steps > 0) != (o.epochs > 0), "give exactly one of --steps K or --epochs E");
  LOOM_CHECK(o.global_batch >= 1, "--global-batch must be at least 1, got ", o.global_batch);
  LOOM_CHECK(o.log_every >= 1, "--log-every must be at least 1");
  LOOM_CHECK(o.checkpoint_every >= 0, "--checkpoint-every must be at least 0, got ", o.checkpoint_every);
  LOOM_CHECK(o.checkpoint_every == 0 || !o.checkpoint.empty(), "--checkpoint-every needs --checkpoint DIR");
  const auto& kinds = schedule::schedule_kinds();
  LOOM_CHECK(std::find(kinds.begin(), kinds.end(), o.schedule) != kinds.end(), "unknown schedule '", o.schedule,
             "' (expected gpipe, dapple, pipedream, pipedream-2bw, interleaved or zb-h1)");

  const ModelSpec spec = make_model(o.model, o.overrides);
  std::unique_ptr<planner::Plan> plan;
  int microbatches = o.microbatches;
  std::int64_t global_batch = o.global_batch;
  std::string schedule_kind = o.schedule;
  if (!o.plan.empty()) {
    plan = std::make_unique<planner::Plan>(planner::read_plan(o.plan));
    LOOM_CHECK(plan->model.empty() || plan->model == o.model, o.plan, ": the plan is for model '", plan->model,
               "', not '", o.model, "'");
    microbatches = plan->microbatches;
    global_batch = plan->global_batch > 0 ? plan->global_batch : global_batch;
    schedule_kind = planner::to_string(plan->schedule);
  }
  LOOM_CHECK(microbatches >= 1, "--microbatches must be at least 1, got ", microbatches);
  const int per_batch = schedule_kind == "pipedream" ? 1 : microbatches;
  LOOM_CHECK(global_batch % per_batch == 0, "--global-batch ", global_batch, " is not divisible by ", per_batch,
             " micro-batches");
  const int chunks = schedule_kind == "interleaved" ? o.chunks : 1;
  Partition part = plan ? partition_from_plan(*plan, o.plan, spec, world) : partition_from_options(o, spec, world, chunks);
  const int stages = part.stages;
  for (std::size_t s = 0; s < part.ranks.size(); ++s)
    LOOM_CHECK(global_batch / per_batch >= static_cast<std::int64_t>(part.ranks[s].size()), "a micro-batch of ",
               global_batch / per_batch, " samples cannot be split over the ", part.ranks[s].size(),
               " replicas of stage ", s);

  // ---- data ------------------------------------------------------------------------------------
  auto train_data = open_dataset(o.data, DatasetSplit::train, spec.data, o.seed);
  const bool classification = spec.data.target_shape.rank() == 0;
  std::unique_ptr<Dataset> test_data;
  if (classification && o.epochs > 0) test_data = open_dataset(o.data, DatasetSplit::test, spec.data, o.seed);
  const std::int64_t steps_per_epoch = train_data->size() / global_batch;
  LOOM_CHECK(steps_per_epoch >= 1, o.data, ": ", train_data->size(), " samples, fewer than one global batch of ",
             global_batch);
  const std::int64_t total_steps = o.steps > 0 ? o.steps : o.epochs * steps_per_epoch;

  // ---- schedule, layout, groups -----------------------------------------------------------------
  // Asynchronous schedules run a window of minibatches without a flush: one epoch (or all steps).
  const std::int64_t window = is_asynchronous(schedule_kind) ? (o.epochs > 0 ? steps_per_epoch : total_steps) : 1;
  schedule::ScheduleOptions so;
  so.kind = schedule_kind;
  so.stages = stages;
  so.microbatches = schedule_kind == "pipedream" ? static_cast<int>(window) : microbatches;
  so.minibatches = static_cast<int>(window);
  so.chunks = chunks;
  so.warmup = o.warmup;
  const schedule::Schedule sched = schedule::make_schedule(so);
  std::vector<std::vector<int>> virtual_ranks;
  for (int v = 0; v < stages * chunks; ++v) virtual_ranks.push_back(part.ranks[v % stages]);
  const comm::ParallelLayout layout = comm::ParallelLayout::from_table(virtual_ranks);
  comm::ProcessGroups groups(layout, comm::Topology::detect(o.ranks_per_node));
  const auto positions = layout.positions(rank);
  LOOM_CHECK(!positions.empty(), "rank ", rank, " has no stage in the layout");
  const int stage = positions.front().stage % stages;

  // ---- this rank's model chunks -----------------------------------------------------------------
  std::vector<std::unique_ptr<Chain>> owned;
  std::vector<Chain*> chunk_ptrs;
  for (int c = 0; c < chunks; ++c) {
    const auto [first, last] = part.blocks.at(static_cast<std::size_t>(sched.virtual_stage(stage, c)));
    owned.push_back(spec.build(first, last));
    owned.back()->initialize(o.seed);
    chunk_ptrs.push_back(owned.back().get());
  }
  LayerPtr loss = spec.make_loss();
  std::vector<NamedParameter> parameters;
  for (Chain* chain : chunk_ptrs)
    for (const NamedParameter& p : trainable_parameters(*chain)) parameters.push_back(p);
  OptimizerSetup optimizer(o, parameters, total_steps);

  // Global gradient-norm clipping: every stage's replica 0 contributes its chunks' sum of squares.
  const bool contributes_norm = std::all_of(positions.begin(), positions.end(), [](auto p) { return p.replica == 0; });
  std::int64_t optimizer_steps = 0;
  auto optimizer_step = [&] {
    double scale = 1.0;
    if (o.clip_norm > 0) {
      double local = contributes_norm ? optimizer.local_grad_sum_of_squares() : 0.0, global = 0;
      MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      scale = clip_scale(global, o.clip_norm);
    }
    optimizer.step(optimizer_steps++, scale);
  };

  // ---- checkpoints ---------------------------------------------------------------------------------
  CheckpointLayout checkpoint_layout{o.model, o.overrides, stage, stages, chunks, {}, global_batch, o.seed};
  std::vector<NamedParameter> checkpoint_parameters;  // buffers too (BatchNorm statistics)
  for (int c = 0; c < chunks; ++c) {
    checkpoint_layout.blocks.push_back(part.blocks.at(static_cast<std::size_t>(sched.virtual_stage(stage, c))));
    for (const NamedParameter& p : chunk_ptrs[static_cast<std::size_t>(c)]->parameters()) checkpoint_parameters.push_back(p);
  }
  std::int64_t first_step = 0;
  if (!o.resume.empty()) {
    first_step = load_training_checkpoint(o.resume, checkpoint_layout, checkpoint_parameters, optimizer.optimizer());
    LOOM_CHECK(first_step < total_steps, o.resume, ": the checkpoint is after step ", first_step, ", but this run has ",
               total_steps, " steps in all (give more --steps or --epochs)");
    LOOM_CHECK(first_step % window == 0, o.resume, ": the checkpoint is after step ", first_step,
               ", inside a ", window, "-step window of the asynchronous schedule");
    optimizer_steps = first_step;
  }

  schedule::ExecutorOptions eo;
  eo.global_batch = global_batch;
  eo.microbatches_per_batch = per_batch;
  eo.seed = o.seed;
  eo.targets_per_sample = spec.targets_per_sample;
  eo.recompute = o.recompute;
  eo.buckets.bucket_bytes = static_cast<std::int64_t>(o.bucket_mb * 1024 * 1024);
  eo.buckets.algorithm = comm::parse_algorithm(o.allreduce);
  eo.buckets.op = comm::ReduceOp::sum;  // losses are already divided by the global batch
  schedule::Executor executor(sched, stage, groups, chunk_ptrs, loss.get(), optimizer_step, eo);

  std::vector<schedule::TraceEvent> trace_events;
  const double trace_origin = now_us();
  if (!o.trace.empty())
    executor.set_event_observer([&](const schedule::ActionEvent& e) {
      trace_events.push_back(schedule::trace_event(e.action, rank, e.stage, (e.start_us - trace_origin) / 1000.0,
                                                   (e.end_us - trace_origin) / 1000.0, chunks > 1));
    });

  // Samples of global batch b: the epoch's seeded order, batch b % steps_per_epoch.
  std::int64_t cached_epoch = -1;
  std::vector<std::int64_t> order;
  auto reader = [&](const schedule::BatchRequest& request, TensorList& inputs, Tensor& targets) {
    const std::int64_t epoch = request.batch / steps_per_epoch;
    if (epoch != cached_epoch) {
      order = epoch_order(train_data->size(), o.seed, epoch);
      cached_epoch = epoch;
    }
    const std::int64_t base = (request.batch % steps_per_epoch) * global_batch + request.first;
    std::vector<std::int64_t> indices(order.begin() + base, order.begin() + base + request.count);
    Tensor x;
    train_data->read(indices, x, targets);
    inputs = {x};
  };

  // ---- reporting ---------------------------------------------------------------------------------
  std::unique_ptr<std::ofstream> metrics;
  if (rank == 0 && !o.metrics.empty()) {
    metrics = std::make_unique<std::ofstream>(o.metrics);
    LOOM_CHECK(metrics->good(), o.metrics, ": cannot open the metrics file for writing");
  }
  const bool progress_bar = rank == 0 && !o.quiet && o.epochs > 0;
  const bool tty = isatty(fileno(stderr));
  if (rank == 0 && !o.quiet) {
    std::printf("loom train: %s | data %s (%lld samples) | %d stage%s x %s | schedule %s | M=%d | B=%lld | %lld steps\n",
                spec.describe().c_str(), o.data.c_str(), static_cast<long long>(train_data->size()), stages,
                stages > 1 ? "s" : "", layout.describe().c_str(), schedule_kind.c_str(), microbatches,
                static_cast<long long>(global_batch), static_cast<long long>(total_steps));
    std::fflush(stdout);
  }

  TrainSummary summary;
  reset_peak_memory();
  Stopwatch total;
  Stopwatch since_log;
  std::int64_t samples_since_log = 0;
  std::int64_t step = first_step;
  if (rank == 0 && !o.quiet && first_step > 0)
    std::printf("resumed from %s after step %lld\n", o.resume.c_str(), static_cast<long long>(first_step));
  auto evaluate = [&](std::int64_t epoch) {
    std::int64_t correct = 0, seen = 0;
    const std::int64_t n = test_data->size();
    for (std::int64_t start = 0; start < n; start += global_batch) {
      const std::int64_t rows = std::min(global_batch, n - start);
      if (rows < per_batch) break;
      auto test_reader = [&](const schedule::BatchRequest& request, TensorList& inputs, Tensor& targets) {
        std::vector<std::int64_t> indices(static_cast<std::size_t>(request.count));
        std::iota(indices.begin(), indices.end(), start + request.first);
        Tensor x;
        test_data->read(indices, x, targets);
        inputs = {x};
      };
      executor.evaluate(epoch, rows, test_reader, [&](std::int64_t, const Tensor& logits, const Tensor& labels) {
        Tensor predicted;
        ops::max(logits.to(Device::cpu()), -1, &predicted);
        const auto p = predicted.span<std::int64_t>();
        const Tensor host_labels = labels.to(Device::cpu());
        const auto y = host_labels.span<std::int64_t>();
        for (std::size_t i = 0; i < p.size(); ++i) correct += p[i] == y[i];
        seen += static_cast<std::int64_t>(p.size());
      });
    }
    std::int64_t local[2] = {correct, seen}, global[2] = {0, 0};
    MPI_Allreduce(local, global, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return global[1] > 0 ? static_cast<double>(global[0]) / static_cast<double>(global[1]) : 0.0;
  };

  while (step < total_steps) {
    const std::int64_t run_first = step;
    const std::int64_t batches = std::min<std::int64_t>(executor.batches_per_run(), total_steps - step);
    LOOM_CHECK(batches == executor.batches_per_run(), "internal: partial window");
    const schedule::StepResult result = executor.run(step, reader);
    std::vector<double> losses(result.loss_sums.size(), 0.0);
    MPI_Allreduce(result.loss_sums.data(), losses.data(), static_cast<int>(losses.size()), MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    const auto peaks = world_peaks(MPI_COMM_WORLD);
    for (std::size_t b = 0; b < losses.size(); ++b, ++step) {
      summary.losses.push_back(losses[b]);
      samples_since_log += global_batch;
      summary.samples += global_batch;
      const bool last = step + 1 == total_steps;
      if (rank != 0 || ((step + 1) % o.log_every != 0 && !last)) continue;
      const double rate = static_cast<double>(samples_since_log) / std::max(1e-9, since_log.elapsed_ms() / 1000.0);
      samples_since_log = 0;
      since_log.reset();
      const double lr = optimizer.learning_rate(step);
      if (metrics) {
        nlohmann::json peak = nlohmann::json::object();
        for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
          peak[std::string(memory_category_name(static_cast<MemoryCategory>(c)))] = peaks[c];
        peak["total"] = peaks[kMemoryCategoryCount];
        *metrics << nlohmann::json{{"step", step + 1}, {"loss", losses[b]}, {"lr", lr}, {"samples_per_s", rate},
                                   {"peak_bytes", peak}}
                        .dump()
                 << "\n";
        metrics->flush();
      }
      if (progress_bar) {
        const std::int64_t in_epoch = step % steps_per_epoch + 1;
        // Without a terminal the bar is a log line: about 20 per epoch, not one per step.
        if (!tty && in_epoch % std::max<std::int64_t>(1, steps_per_epoch / 20) != 0 && in_epoch != steps_per_epoch)
          continue;
        const double elapsed = total.elapsed_ms() / 1000.0;
        const double eta = elapsed / static_cast<double>(step + 1) * static_cast<double>(total_steps - step - 1);
        const int width = 30, filled = static_cast<int>(width * in_epoch / steps_per_epoch);
        std::fprintf(stderr, "%sepoch %lld/%lld [%s%s] %lld/%lld loss %.4f %.0f samples/s ETA %s%s",
                     tty ? "\r" : "", static_cast<long long>(step / steps_per_epoch + 1),
                     static_cast<long long>(o.epochs), std::string(filled, '#').c_str(),
                     std::string(width - filled, '.').c_str(), static_cast<long long>(in_epoch),
                     static_cast<long long>(steps_per_epoch), losses[b], rate, format_duration(eta).c_str(),
                     tty ? "" : "\n");
      } else if (!o.quiet) {
        std::printf("step %lld | loss %.5f | lr %.4g | %.0f samples/s | peak %s (activations %s)\n",
                    static_cast<long long>(step + 1), losses[b], lr, rate,
                    human_bytes(static_cast<double>(peaks[kMemoryCategoryCount])).c_str(),
                    human_bytes(static_cast<double>(peaks[static_cast<std::size_t>(MemoryCategory::activations)])).c_str());
        std::fflush(stdout);
      }
    }
    if (test_data && step % steps_per_epoch == 0) {
      const double accuracy = evaluate(step / steps_per_epoch);
      summary.test_accuracy.push_back(accuracy);
      if (rank == 0) {
        if (progress_bar && tty) std::fprintf(stderr, "\n");
        if (!o.quiet) std::printf("epoch %lld: test accuracy %.2f%%\n", static_cast<long long>(step / steps_per_epoch),
                                  100.0 * accuracy);
        std::fflush(stdout);
        if (metrics) {
          *metrics << nlohmann::json{{"epoch", step / steps_per_epoch}, {"test_accuracy", accuracy}}.dump() << "\n";
          metrics->flush();
        }
      }
    }
    // At the end, and whenever this run crossed a multiple of --checkpoint-every.
    const bool crossed = o.checkpoint_every > 0 && step / o.checkpoint_every > run_first / o.checkpoint_every;
    if (!o.checkpoint.empty() && (crossed || step == total_steps)) {
      save_training_checkpoint(o.checkpoint, checkpoint_layout, step, checkpoint_parameters, optimizer.optimizer(),
                               contributes_norm);
      if (rank == 0 && !o.quiet) {
        if (progress_bar && tty) std::fprintf(stderr, "\n");
        std::printf("checkpoint: %s after step %lld\n", o.checkpoint.c_str(), static_cast<long long>(step));
        std::fflush(stdout);
      }
    }
  }
  summary.seconds = total.elapsed_ms() / 1000.0;
  summary.peak_activation_bytes = memory_stats().peak(MemoryCategory::activations);
  if (rank == 0 && !o.quiet)
    std::printf("done: %lld steps, %lld samples in %.1f s (%.0f samples/s)\n", static_cast<long long>(total_steps),
                static_cast<long long>(summary.samples), summary.seconds,
                static_cast<double>(summary.samples) / std::max(summary.seconds, 1e-9));

  if (!o.trace.empty()) write_trace(o.trace, trace_events, layout, stages);
  if (on_finish) on_finish({stage, chunk_ptrs});
  return summary;
}

}  // namespace loom::apps
