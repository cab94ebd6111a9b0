// Trainer: pipelined + data-parallel training as a library, the way `loom train` runs it and the
// way research code drives it from its own main(). Collective over MPI_COMM_WORLD: every rank
// builds a Trainer from the same config, and each builds only its own stage(s) of the model.
//
// The Trainer owns the data reader, the process groups, the executor, the optimizer step and the
// checkpoint policy, and keeps the one step counter (optimizer steps taken, from 0 or from a
// resumed checkpoint). One run():
//   repeat until `steps` (or `epochs` x steps per epoch) optimizer steps are done:
//     executor.run over the schedule's window (1 batch, or the PipeDream window)
//     → global losses and memory peaks agreed over the world → on_step per batch
//     → at an epoch's end: evaluation (classification) → on_epoch
//     → checkpoint when due (every `checkpoint_every` steps crossed, and at the end) → on_checkpoint
// Hooks run on every rank (with the same global numbers); apps print on rank 0.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <loom/core/device.h>
#include <loom/core/device_memory.h>
#include <loom/core/memory.h>
#include <loom/layers/chain.h>
#include <loom/models/model.h>

namespace loom::comm {
class ProcessGroups;
}

namespace loom::runtime {

struct TrainerConfig {
  std::string model = "mlp";
  std::string size = "paper";     // the preset's size: paper, cpu or tiny (models/model.h)
  std::string overrides;          // key=value,... (preset settings, on top of the size's)
  std::string data = "synthetic";
  std::string plan;               // plan JSON from `loom plan` (stages, replicas, ranks, micro-batches, schedule)
  std::string schedule;           // a schedule kind name; empty: dapple (or the plan's). Not with `plan`.
  int stages = 1;
  int replicas = 1;
  int microbatches = 4;
  int chunks = 2;                 // interleaved: virtual stages per rank
  std::vector<int> warmup;        // dapple/pipedream: warm-up forwards (K of the first stage, or per stage)
  std::int64_t global_batch = 64;
  std::int64_t steps = 0;         // exclusive with epochs
  std::int64_t epochs = 0;
  std::uint64_t seed = 1;
  int threads = 0;                // 0: LOOM_NUM_THREADS or cores / local ranks
  // Where each rank computes: cpu, cuda (GPU local_rank % GPUs of the node), cuda:N, sim or sim:N
  // (a simulated device: CPU kernels, device memory rules; core/device.h). On a device the stage's
  // parameters, gradients, optimizer state and activations live there; batches are copied to it,
  // and stage boundaries are staged through host memory over MPI.
  std::string device = "cpu";
  // What a stage's gradient allreduce runs on with --device cuda: auto (NCCL where every replica
  // of the stage has a GPU of its own, else host-staged over MPI), nccl (an error where it cannot)
  // or mpi (host-staged). Off CUDA always MPI.
  std::string reduce_backend = "auto";
  // How activations and their gradients cross stage boundaries with --device cuda: auto (NCCL
  // send/receive where every rank of both sides has a GPU of its own, else host-staged over MPI),
  // nccl (an error where it cannot) or mpi (host-staged). Off CUDA MPI, except that sim runs with
  // LOOM_SIM_DEVICES > 1 take NCCL's stand-in under auto (boundary_transport.h).
  std::string boundary_backend = "auto";
  std::string optimizer = "sgd";  // sgd | momentum | adam | adamw (layers/optimizer_kind.h)
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::string lr_schedule = "cosine";  // constant | linear | cosine (decay to 0 after warmup_steps)
  std::int64_t warmup_steps = 0;
  double clip_norm = 0.0;         // global gradient-norm clipping (0: off)
  bool recompute = false;
  // fp32, bf16 or fp16: 16-bit compute with fp32 master weights, fp32 accumulation and an fp32
  // optimizer (runtime/precision.h); fp16 also scales the loss dynamically (loss_scaler.h) and
  // needs a synchronous schedule. Checkpoints hold the fp32 masters, record the precision (and
  // the loss scale); a resume must use the same precision.
  std::string precision = "fp32";
  double loss_scale = 65536.0;          // fp16: the initial loss scale
  std::int64_t loss_scale_window = 2000;  // fp16: good steps in a row before the scale doubles
  std::string ranks_per_node;     // topology override (also LOOM_RANKS_PER_NODE)
  std::string allreduce = "hierarchical";
  double bucket_mb = 25.0;
  std::string trace;              // Chrome trace JSON of the executed actions (gathered to rank 0)
  std::string checkpoint;         // directory: write a checkpoint at the end (and every checkpoint_every steps)
  std::int64_t checkpoint_every = 0;
  int keep_checkpoints = 2;       // complete checkpoints kept in `checkpoint` (older ones deleted after each commit)
  std::string resume;             // checkpoint directory to continue from: its newest complete checkpoint
};

// Peak bytes per MemoryCategory, then the total, since the run started.
using MemoryPeaks = std::array<std::int64_t, kMemoryCategoryCount + 1>;

struct StepReport {
  std::int64_t step = 0;  // optimizer steps done, counting this one (1-based)
  double loss = 0;        // the global-batch mean loss
  double lr = 0;          // the learning rate the step used
  MemoryPeaks peaks{};    // the maximum over all ranks (what one device must hold)
  std::vector<MemoryPeaks> stage_peaks;  // per pipeline stage: the maximum over its replicas
  // Per pipeline stage, what its device reports now (cudaMemGetInfo; the host's MemAvailable for
  // cpu): the least free bytes over its replicas, and the total.
  std::vector<DeviceMemoryInfo> stage_device_memory;
  // fp16 (loss_scaler.h): the loss scale this step's backward used, and whether its gradients
  // overflowed so that no parameter changed. Other precisions: 1 and false.
  double loss_scale = 1.0;
  bool skipped = false;
};
struct EpochReport {
  std::int64_t epoch = 0;  // 1-based
  double test_accuracy = 0;
};
struct CheckpointReport {
  std::string dir;  // the step directory written (DIR/step-N)
  std::int64_t step = 0;
};
struct TrainerHooks {
  std::function<void(const StepReport&)> on_step;
  std::function<void(const EpochReport&)> on_epoch;
  std::function<void(const CheckpointReport&)> on_checkpoint;
};

struct TrainSummary {
  std::vector<double> losses;         // per optimizer step of this run: the global-batch mean loss
  std::vector<double> test_accuracy;  // per epoch (classification with epochs)
  double seconds = 0;
  std::int64_t samples = 0;
  std::int64_t peak_activation_bytes = 0;  // this rank's peak of MemoryCategory::activations
};

// What a run looks like, resolved from the config (and plan), the same on every rank.
struct RunShape {
  std::string schedule;  // kind name
  int stages = 1;
  int chunks = 1;
  int microbatches = 1;
  std::int64_t global_batch = 1;
  std::int64_t steps = 0;           // optimizer steps of the whole run
  std::int64_t steps_per_epoch = 0;
  std::int64_t train_samples = 0;
};

namespace detail {
struct TrainerState;
}

class Trainer {
 public:
  explicit Trainer(TrainerConfig config);
  // A model of the caller's own (a chain of blocks with a loss) instead of a preset.
  Trainer(TrainerConfig config, ModelSpec model);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains the remaining steps.
  TrainSummary run(const TrainerHooks& hooks = {});
  // Test accuracy of the current weights over the test split (classification only), as `epoch`.
  double evaluate(std::int64_t epoch);

  const RunShape& shape() const;
  const ModelSpec& model() const;
  // "mlp (...) | data synthetic (60000 samples) | 2 stages x 2 replicas | schedule dapple | M=4 | B=64 | 100 steps"
  std::string describe() const;
  std::int64_t step() const;        // optimizer steps done (the one step counter)
  std::int64_t first_step() const;  // where this Trainer started (> 0 after a resume)
  const std::string& resumed_from() const;  // the checkpoint directory of a resume (DIR/step-N), else empty
  int stage() const;                // this rank's pipeline stage
  Device device() const;            // where this rank computes (resolved from config.device)
  const std::vector<Chain*>& chunks() const;  // this rank's model chunks (global block indices)
  comm::ProcessGroups& groups();

 private:
  std::unique_ptr<detail::TrainerState> state_;
};

}  // namespace loom::runtime
