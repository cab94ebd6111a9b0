// Trainer: pipelined + data-parallel training as a library, the way `loom train` runs it and the
// way research code drives it from its own main(). Collective over MPI_COMM_WORLD: every rank
// builds a Trainer from the same config (trainer_config.h), and each builds only its own stage(s)
// of the model.
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
#include <loom/runtime/run_layout.h>
#include <loom/runtime/straggler.h>
#include <loom/runtime/trainer_config.h>
#include <loom/schedule/schedule_kind.h>

namespace loom::comm {
class ProcessGroups;
}

namespace loom::runtime {

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
  // Per world rank: the step's time on it not spent waiting for other ranks (straggler.h); the ranks
  // whose busy time has just been over the rule's ratio x the median of their stage's other
  // replicas for its number of steps in a row, and per world rank that median (0: none compared).
  std::vector<double> rank_busy_seconds;
  std::vector<int> stragglers;
  std::vector<double> busy_reference_seconds;
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

namespace detail {
struct TrainerState;
}

class Trainer {
 public:
  // The config is resolved first (resolve_config): a bad value throws before MPI is touched.
  explicit Trainer(const TrainerConfig& config);
  explicit Trainer(ResolvedConfig config);
  // A model of the caller's own (a chain of blocks with a loss) instead of a preset.
  Trainer(const TrainerConfig& config, ModelSpec model);
  Trainer(ResolvedConfig config, ModelSpec model);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains the remaining steps.
  TrainSummary run(const TrainerHooks& hooks = {});
  // Test accuracy of the current weights over the test split (classification only), as `epoch`.
  double evaluate(std::int64_t epoch);

  const ResolvedConfig& config() const;
  const RunLayout& layout() const;  // the run resolved: schedule, stages, ranks, batch, length
  const ModelSpec& model() const;
  // "mlp (...): 4 blocks | size cpu | data synthetic (60000 samples) | 2 stages x 2 replicas (stage 0: ranks 0 1 | ...)
  // | schedule dapple | M=4 | B=64 | 100 steps | sgd, lr 0.05 cosine over steps 1 to 100 | 2 threads"; a plan, ZeRO-1 and
  // bf16 or fp16 where they are on, and each stage's chunks (virtual stages) where it holds several
  std::string describe() const;
  std::int64_t step() const;        // optimizer steps done (the one step counter)
  std::int64_t first_step() const;  // where this Trainer started (> 0 after a resume)
  const std::string& resumed_from() const;  // the checkpoint directory of a resume (DIR/step-N), else empty
  const LrSchedule& lr_schedule() const;    // the learning rate of each step (a resume may start it late)
  int stage() const;                // this rank's pipeline stage
  int stage_of_rank(int rank) const;  // the pipeline stage world rank `rank` belongs to
  // Why no rank is watched for straggling this run (a node's ranks share its cores), empty when
  // each stage's replicas are compared (straggler.h).
  const std::string& straggler_notice() const;
  const StragglerRule& straggler_rule() const;
  Device device() const;            // where this rank computes (resolved from the config's device)
  const std::vector<Chain*>& chunks() const;  // this rank's model chunks (global block indices)
  // This rank's gradient buckets that reduce-scatter (--zero 1), and all of them.
  std::pair<int, int> scattered_buckets() const;
  comm::ProcessGroups& groups();

 private:
  std::unique_ptr<detail::TrainerState> state_;
};

}  // namespace loom::runtime
