// TrainerConfig parsed once into a ResolvedConfig (see trainer_config.h).
#include <loom/runtime/trainer_config.h>

#include <cmath>

#include <loom/base/error.h>
#include <loom/layers/optimizer_kind.h>

namespace loom::runtime {

BackendChoice parse_backend_choice(std::string_view text, std::string_view flag) {
  if (text == "auto") return BackendChoice::automatic;
  if (text == "mpi") return BackendChoice::mpi;
  if (text == "nccl") return BackendChoice::nccl;
  LOOM_THROW(flag, " '", text, "': expected auto, mpi or nccl");
}

const char* backend_choice_name(BackendChoice choice) {
  switch (choice) {
    case BackendChoice::automatic: return "auto";
    case BackendChoice::mpi: return "mpi";
    case BackendChoice::nccl: return "nccl";
  }
  return "?";
}

namespace {

PipelineConfig pipeline_config(const TrainerConfig& o) {
  LOOM_CHECK(o.plan.empty() || o.schedule.empty(), "--schedule ", o.schedule, " and --plan ", o.plan,
             " do not go together: the plan names its schedule (edit the plan, or drop --plan)");
  LOOM_CHECK(o.global_batch >= 1, "--global-batch must be at least 1, got ", o.global_batch);
  LOOM_CHECK(o.plan.empty() || o.schedule_file.empty(), "--schedule-file ", o.schedule_file, " and --plan ", o.plan,
             " do not go together: the plan names its schedule");
  PipelineConfig p{o.plan,   o.schedule_file, std::nullopt, o.stages,      o.replicas,
                   o.microbatches, o.chunks,  o.warmup,     o.global_batch};
  if (!o.schedule.empty()) p.schedule = schedule::parse_schedule_kind(o.schedule, "--schedule");
  return p;
}

CommConfig comm_config(const TrainerConfig& o) {
  LOOM_CHECK(std::isfinite(o.bucket_mb) && o.bucket_mb > 0 && o.bucket_mb <= 1 << 16,
             "--bucket-mb must be in (0, 65536], got ", o.bucket_mb);
  CommConfig c;
  c.device = parse_device_request(o.device);
  c.reduce_backend = parse_backend_choice(o.reduce_backend, "--reduce-backend");
  c.boundary_backend = parse_backend_choice(o.boundary_backend, "--boundary-backend");
  c.ranks_per_node = o.ranks_per_node;
  c.allreduce = comm::parse_algorithm(o.allreduce, "--allreduce");
  c.bucket_mb = o.bucket_mb;
  return c;
}

OptimizerConfig optimizer_config(const TrainerConfig& o) {
  OptimizerConfig c;
  c.kind = parse_optimizer_kind(o.optimizer);
  c.lr = o.lr;
  c.momentum = o.momentum;
  c.weight_decay = o.weight_decay;
  c.lr_schedule = LrSchedule::parse(o.lr_schedule);
  c.warmup_steps = o.warmup_steps;
  c.clip_norm = o.clip_norm;
  c.zero = o.zero;
  validate(c);
  return c;
}

CheckpointConfig checkpoint_config(const TrainerConfig& o) {
  LOOM_CHECK(o.checkpoint_every >= 0, "--checkpoint-every must be at least 0, got ", o.checkpoint_every);
  LOOM_CHECK(o.checkpoint_every == 0 || !o.checkpoint.empty(), "--checkpoint-every needs --checkpoint DIR");
  LOOM_CHECK(o.keep_checkpoints >= 1 && o.keep_checkpoints <= 1000000, "--keep-checkpoints must be in [1, 1000000], got ",
             o.keep_checkpoints);
  return {o.checkpoint, o.checkpoint_every, o.keep_checkpoints, o.resume};
}

}  // namespace

ResolvedConfig resolve_config(const TrainerConfig& o) {
  LOOM_CHECK((o.steps > 0) != (o.epochs > 0), "give exactly one of --steps K or --epochs E");
  LOOM_CHECK(o.steps >= 0 && o.steps <= kMaxSteps, "--steps must be in [1, ", kMaxSteps, "], got ", o.steps);
  LOOM_CHECK(o.epochs >= 0 && o.epochs <= kMaxEpochs, "--epochs must be in [1, ", kMaxEpochs, "], got ", o.epochs);
  LOOM_CHECK(o.threads >= 0 && o.threads <= kMaxThreads, "--threads must be 0 (automatic) or in [1, ", kMaxThreads,
             "], got ", o.threads);
  ResolvedConfig r;
  r.model = o.model;
  r.size = o.size;
  r.overrides = o.overrides;
  r.data = o.data;
  r.seed = o.seed;
  r.steps = o.steps;
  r.epochs = o.epochs;
  r.threads = o.threads;
  r.recompute = o.recompute;
  r.trace = o.trace;
  r.optimizer = optimizer_config(o);
  r.comm = comm_config(o);
  r.checkpoint = checkpoint_config(o);
  r.pipeline = pipeline_config(o);
  r.precision.precision = parse_precision(o.precision);
  r.precision.loss_scaler = {o.loss_scale, o.loss_scale_window};
  validate(r.precision.loss_scaler);
  return r;
}

}  // namespace loom::runtime
