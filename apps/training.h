// Pipelined training as `loom train` runs it, usable from tests: every rank builds its own
// stage(s) of the model, runs the schedule's program per global batch through the executor, and
// rank 0 reports progress and metrics. Collective over MPI_COMM_WORLD.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <loom/layers/chain.h>

namespace loom::apps {

struct TrainOptions {
  std::string model = "mlp";
  std::string overrides;          // --set key=value,...
  std::string data = "synthetic";
  std::string plan;               // --plan FILE (stages, replicas, ranks, micro-batches, schedule)
  std::string schedule = "dapple";
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
  std::string optimizer = "sgd";  // sgd | adam | adamw
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::string lr_schedule = "cosine";  // constant | linear | cosine (decay to 0 after warmup_steps)
  std::int64_t warmup_steps = 0;
  double clip_norm = 0.0;         // global gradient-norm clipping (0: off)
  bool recompute = false;
  std::string ranks_per_node;     // topology override (also LOOM_RANKS_PER_NODE)
  std::string allreduce = "hierarchical";
  double bucket_mb = 25.0;
  std::int64_t log_every = 1;
  std::string metrics;            // JSON lines, rank 0
  std::string trace;              // Chrome trace JSON of the executed actions (gathered to rank 0)
  std::string checkpoint;         // directory: write a checkpoint at the end (and every checkpoint_every steps)
  std::int64_t checkpoint_every = 0;
  std::string resume;             // directory of a checkpoint to continue from
  bool quiet = false;             // no progress output (tests)
};

struct TrainSummary {
  std::vector<double> losses;         // per optimizer step: the global-batch mean loss (every rank)
  std::vector<double> test_accuracy;  // per epoch (classification with --epochs)
  double seconds = 0;
  std::int64_t samples = 0;
  std::int64_t peak_activation_bytes = 0;  // this rank's peak of MemoryCategory::activations
};

// What a test may inspect when training ends: this rank's model chunks (blocks with global
// indices) and its (stage, chunk) positions.
struct TrainedStage {
  int stage = 0;
  std::vector<Chain*> chunks;
};

TrainSummary train(const TrainOptions& options,
                   const std::function<void(const TrainedStage&)>& on_finish = nullptr);

}  // namespace loom::apps
