// What a training run is. TrainerConfig: as `loom train`'s flags, config files and research code
// give it, names as strings and numbers as given (`config.schedule = "zb-h1"`). ResolvedConfig:
// the same parsed once and checked (resolve_config), every name a typed value, grouped by the part
// of the runtime that uses it. The Trainer resolves its config before it builds anything or opens
// any communicator, so a bad value is one loom::Error naming its flag on every rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <loom/comm/allreduce.h>
#include <loom/core/device.h>
#include <loom/runtime/loss_scaler.h>
#include <loom/runtime/optimizer_step.h>
#include <loom/runtime/precision.h>
#include <loom/schedule/schedule_kind.h>

namespace loom::runtime {

struct TrainerConfig {
  std::string model = "mlp";
  std::string size = "paper";     // the preset's size: paper, cpu or tiny (models/model.h)
  std::string overrides;          // key=value,... (preset settings, on top of the size's)
  std::string data = "synthetic";
  std::string plan;               // plan JSON from `loom plan` (stages, replicas, ranks, micro-batches, schedule)
  std::string schedule;           // a schedule kind name; empty: dapple (or the plan's). Not with `plan`.
  // A schedule file (loom's text or PyTorch's CSV, schedule/schedule_file.h): stages, chunks and M
  // from the file, replicas = ranks / stages; `stages`, `chunks` and `microbatches` must agree with
  // it unless 0 (`loom train` sets 0 for the flags not given). Not with `plan`.
  std::string schedule_file;
  int stages = 1;
  int replicas = 1;
  int microbatches = 4;           // synchronous schedules; PipeDream's have none (one minibatch at a time)
  int chunks = 2;                 // interleaved: virtual stages per rank
  std::vector<int> warmup;        // dapple/pipedream: warm-up forwards (K of the first stage, or per stage)
  std::int64_t global_batch = 64;
  std::int64_t steps = 0;         // exclusive with epochs
  std::int64_t epochs = 0;
  std::uint64_t seed = 1;
  int threads = 0;                // 0: LOOM_NUM_THREADS or cores / local ranks
  // cpu, cuda, cuda:N, sim or sim:N (core/device.h); the backends: auto, mpi or nccl (BackendChoice).
  std::string device = "cpu";
  std::string reduce_backend = "auto";
  std::string boundary_backend = "auto";
  std::string optimizer = "sgd";  // sgd | momentum | adam | adamw (layers/optimizer_kind.h)
  double lr = 0.05;  // `loom train` without --lr: default_learning_rate (0.001 for adam and adamw)
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::string lr_schedule = "cosine";  // constant | linear | cosine (decay to 0 after warmup_steps)
  std::int64_t warmup_steps = 0;
  double clip_norm = 0.0;         // global gradient-norm clipping (0: off)
  // 1: ZeRO-1, the optimizer state (and fp32 masters) sharded over each stage's replicas
  // (zero_shard.h); synchronous schedules only; a no-op at one replica.
  int zero = 0;
  bool recompute = false;
  // fp32, bf16 or fp16 (precision.h); fp16 also scales the loss (loss_scaler.h) and needs a
  // synchronous schedule. Checkpoints record the precision (and the loss scale); a resume must use
  // the same precision.
  std::string precision = "fp32";
  double loss_scale = 65536.0;          // fp16: the initial loss scale
  std::int64_t loss_scale_window = 2000;  // fp16: good steps in a row before the scale doubles
  std::string ranks_per_node;     // topology override (also LOOM_RANKS_PER_NODE)
  std::string allreduce = "hierarchical";  // mpi | ring | hierarchical (comm/allreduce.h)
  double bucket_mb = 25.0;
  std::string trace;              // Chrome trace JSON of the executed actions (gathered to rank 0)
  std::string checkpoint;         // directory: write a checkpoint at the end (and every checkpoint_every steps)
  std::int64_t checkpoint_every = 0;
  int keep_checkpoints = 2;       // complete checkpoints kept in `checkpoint` (older ones deleted after each commit)
  std::string resume;             // checkpoint directory to continue from: its newest complete checkpoint
};

// How a group of tensors moves when the run computes on CUDA devices (--reduce-backend for a
// stage's gradient allreduce, --boundary-backend for the activations and gradients that cross stage
// boundaries). The one explanation of the three choices:
//   automatic ("auto")  NCCL for every group whose ranks each have a GPU of their own (a stage's
//                       replicas; the ranks of both sides of a boundary), host-staged MPI for the
//                       others (device -> host -> MPI -> host -> device); rank 0 prints which and why
//   nccl                NCCL everywhere, an error naming the group where it cannot be
//   mpi                 host-staged MPI everywhere
// Off CUDA everything moves over MPI (nccl is an error), except that a sim run's boundaries between
// ranks on distinct sim devices (LOOM_SIM_DEVICES > 1) take NCCL's stand-in under auto
// (comm/boundary_transport.h). device_setup.h plans it.
enum class BackendChoice : std::uint8_t { automatic, mpi, nccl };
// "auto", "mpi" or "nccl"; else a loom::Error naming `flag`.
BackendChoice parse_backend_choice(std::string_view text, std::string_view flag);
const char* backend_choice_name(BackendChoice choice);

// The schedule, the stage split and the micro-batches (from the flags, or from a plan file).
struct PipelineConfig {
  std::string plan;                                // a plan file, or empty
  std::string schedule_file;                       // a schedule file, or empty
  std::optional<schedule::ScheduleKind> schedule;  // unset: dapple, or the plan's
  int stages = 1, replicas = 1, microbatches = 4, chunks = 2;
  std::vector<int> warmup;
  std::int64_t global_batch = 64;
};
// Where ranks compute and how their tensors move.
struct CommConfig {
  DeviceRequest device;
  BackendChoice reduce_backend = BackendChoice::automatic;
  BackendChoice boundary_backend = BackendChoice::automatic;
  std::string ranks_per_node;
  comm::AllreduceAlgorithm allreduce = comm::AllreduceAlgorithm::hierarchical;
  double bucket_mb = 25.0;
};
// What a run writes and reads besides the data.
struct CheckpointConfig {
  std::string dir;  // --checkpoint
  std::int64_t every = 0;
  int keep = 2;
  std::string resume;
};

struct ResolvedConfig {
  std::string model, size, overrides;  // the preset (the Trainer builds the ModelSpec from them)
  std::string data;
  std::uint64_t seed = 1;
  std::int64_t steps = 0, epochs = 0;
  int threads = 0;
  bool recompute = false;
  std::string trace;
  PipelineConfig pipeline;
  CommConfig comm;
  OptimizerConfig optimizer;
  PrecisionConfig precision;
  CheckpointConfig checkpoint;
};

// Ranges of the numbers a config may give (larger ones are typos or attacks, not runs).
inline constexpr std::int64_t kMaxSteps = std::int64_t{1} << 40;
inline constexpr std::int64_t kMaxEpochs = 1'000'000;
inline constexpr int kMaxThreads = 1024;

// Parses every name and checks every number that needs no model, no data and no other rank; a
// loom::Error names the flag. Research code may call it to check a config early.
ResolvedConfig resolve_config(const TrainerConfig& config);

}  // namespace loom::runtime
