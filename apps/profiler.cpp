// The block profiler and the stage activation probe (see profiler.h).
#include "profiler.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include <loom/core/error.h>
#include <loom/core/memory.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>
#include <loom/models/dataset.h>
#include <loom/runtime/stage_runner.h>
#include "median.h"

namespace loom::apps {

namespace {

// A StageRunner's options: the seed, no recomputation, fp32.
runtime::StageRunnerOptions seeded(std::uint64_t seed) {
  runtime::StageRunnerOptions options;
  options.seed = seed;
  return options;
}

std::int64_t live(Device device, MemoryCategory category) { return memory_stats(device).live(category); }

// Wall-clock milliseconds of `work` with the device drained before and after (a GPU's queued
// kernels finish inside the interval they belong to).
template <typename Work>
double timed_ms(Device device, Work&& work) {
  synchronize(device);
  Stopwatch watch;
  work();
  synchronize(device);
  return watch.elapsed_ms();
}

std::int64_t bytes_of(const TensorList& tensors) {
  std::int64_t total = 0;
  for (const Tensor& t : tensors)
    if (t.defined()) total += static_cast<std::int64_t>(t.nbytes());
  return total;
}

// One micro-batch of synthetic data shaped for the model.
struct Microbatch {
  Tensor inputs, targets;
  double loss_denominator = 1;
};

Microbatch read_microbatch(const ModelSpec& spec, std::int64_t rows, std::uint64_t seed, Device device) {
  LOOM_CHECK(rows >= 1, "the micro-batch must hold at least one sample, got ", rows);
  const auto data = open_dataset("synthetic", DatasetSplit::train, spec.data, seed);
  LOOM_CHECK(rows <= data->size(), "a micro-batch of ", rows, " samples is larger than the synthetic dataset (",
             data->size(), ")");
  std::vector<std::int64_t> indices(static_cast<std::size_t>(rows));
  std::iota(indices.begin(), indices.end(), 0);
  Microbatch mb;
  data->read(indices, mb.inputs, mb.targets);
  mb.inputs = mb.inputs.to(device);
  if (mb.targets.defined()) mb.targets = mb.targets.to(device);
  mb.loss_denominator = static_cast<double>(rows) * static_cast<double>(spec.targets_per_sample);
  return mb;
}

// One block (and the loss, for the last block) run as a stage runs it: a one-block stage.
class BlockRunner {
 public:
  BlockRunner(std::unique_ptr<Chain> block, LayerPtr loss, const Microbatch& mb, std::uint64_t seed)
      : block_(std::move(block)), loss_(std::move(loss)), runner_(*block_, loss_.get(), seeded(seed)), mb_(mb) {}

  // The block's outputs (the logits for the last block, whose loss value the runner keeps).
  TensorList forward(const TensorList& inputs) {
    return runner_.forward(0, inputs, mb_.targets, {0, 0, mb_.loss_denominator});
  }
  // Backward from the gradient of the block's outputs (ignored by the last block, which starts
  // from its loss); returns the gradient of its inputs.
  TensorList backward(const TensorList& grad_outputs) { return runner_.backward(0, grad_outputs); }
  void release() { runner_.release_all(); }
  Chain& block() { return *block_; }

 private:
  std::unique_ptr<Chain> block_;
  LayerPtr loss_;
  runtime::StageRunner runner_;
  const Microbatch& mb_;
};

// What one block's forward does to activation memory, from loom's memory accounting. Its input
// is a copy charged to MemoryCategory::communication (as a received boundary tensor is), so the
// bytes the block keeps of its input show up there.
struct BlockMemory {
  std::int64_t kept_own = 0;             // allocated by the block, kept by its context
  std::int64_t outputs_kept_by_self = 0;  // the part of kept_own that is its outputs
  std::int64_t input_kept = 0;           // bytes of its input its context keeps
  std::int64_t output_bytes = 0;
};

BlockMemory probe_block(BlockRunner& runner, const TensorList& inputs, Device device) {
  BlockMemory m;
  TensorList input_copy;
  {
    MemoryCategoryScope scope(MemoryCategory::communication);
    for (const Tensor& t : inputs) input_copy.push_back(t.defined() ? t.clone() : t);
  }
  const std::int64_t before = live(device, MemoryCategory::activations);
  TensorList outputs = runner.forward(input_copy);
  const std::int64_t with_outputs = live(device, MemoryCategory::activations) - before;
  m.output_bytes = bytes_of(outputs);
  outputs.clear();
  m.kept_own = live(device, MemoryCategory::activations) - before;
  m.outputs_kept_by_self = std::max<std::int64_t>(0, m.output_bytes - (with_outputs - m.kept_own));
  const std::int64_t comm_before = live(device, MemoryCategory::communication);
  const std::int64_t input_bytes = bytes_of(input_copy);
  input_copy.clear();
  m.input_kept = input_bytes - (comm_before - live(device, MemoryCategory::communication));
  runner.release();
  return m;
}

}  // namespace

planner::Profile profile_model(const ProfileOptions& o) {
  LOOM_CHECK(o.repeats >= 1, "--repeats must be at least 1, got ", o.repeats);
  LOOM_CHECK(o.warmup >= 0, "--warmup must not be negative, got ", o.warmup);
  LOOM_CHECK(o.microbatch >= 1, "--microbatch must be at least 1, got ", o.microbatch);
  set_num_threads(o.threads > 0 ? o.threads : default_num_threads());
  const Device device = resolve_device_flag(o.device, 0);
  const ModelSpec spec = make_model(o.model, o.overrides, parse_model_size(o.size));
  const Microbatch mb = read_microbatch(spec, o.microbatch, o.seed, device);

  planner::Profile profile;
  profile.model = spec.name;
  profile.microbatch = static_cast<double>(o.microbatch);
  const std::string threads = std::to_string(num_threads()) + (num_threads() == 1 ? " thread" : " threads");
  profile.device = device.is_cpu()   ? "cpu, " + threads
                   : device.is_sim() ? device.str() + " (cpu kernels, " + threads + ")"
                                     : device.str();
  const std::int64_t blocks = spec.blocks();
  std::vector<std::unique_ptr<BlockRunner>> runners;
  for (std::int64_t i = 0; i < blocks; ++i) {
    auto block = spec.build(i, i + 1);
    block->initialize(o.seed);
    block->to(device);
    LayerPtr loss = i + 1 == blocks ? spec.make_loss() : nullptr;
    if (loss) loss->to(device);
    runners.push_back(std::make_unique<BlockRunner>(std::move(block), std::move(loss), mb, o.seed));
  }
  // Blocks are timed inside whole passes (every forward, then every backward), as a stage runs
  // them: a block timed alone, over and over, finds its weights in cache and looks faster.
  std::vector<std::vector<double>> forward_ms(blocks), backward_ms(blocks);
  auto pass = [&](bool timed) {
    TensorList x = {mb.inputs};
    for (std::int64_t i = 0; i < blocks; ++i) {
      const double ms = timed_ms(device, [&] { x = runners[i]->forward(x); });
      if (timed) forward_ms[i].push_back(ms);
    }
    TensorList grad;
    for (std::int64_t i = blocks; i-- > 0;) {
      const double ms = timed_ms(device, [&] { grad = runners[i]->backward(grad); });
      if (timed) backward_ms[i].push_back(ms);
    }
  };
  for (int w = 0; w < std::max(o.warmup, 1); ++w) pass(false);

  std::vector<BlockMemory> memory;
  TensorList inputs = {mb.inputs};
  for (std::int64_t i = 0; i < blocks; ++i) {
    memory.push_back(probe_block(*runners[i], inputs, device));
    inputs = runners[i]->forward(inputs);
    runners[i]->release();
  }
  for (int r = 0; r < o.repeats; ++r) pass(true);

  for (std::int64_t i = 0; i < blocks; ++i) {
    planner::LayerProfile layer;
    layer.name = spec.block_names.at(static_cast<std::size_t>(i));
    layer.cost.forward_ms = median(forward_ms[i]);
    layer.cost.backward_ms = median(backward_ms[i]);
    layer.cost.boundary_bytes = static_cast<double>(memory[i].output_bytes);
    layer.parameter_bytes = static_cast<double>(runners[i]->block().parameter_bytes());
    profile.layers.push_back(layer);
  }
  // Each block is charged what it made and something keeps: its own kept bytes, plus its outputs
  // when only the next block keeps them.
  for (std::int64_t i = 0; i < blocks; ++i) {
    const BlockMemory& m = memory[static_cast<std::size_t>(i)];
    std::int64_t kept = m.kept_own;
    if (i + 1 < blocks)
      kept += std::max<std::int64_t>(0, memory[static_cast<std::size_t>(i + 1)].input_kept - m.outputs_kept_by_self);
    profile.layers[static_cast<std::size_t>(i)].cost.activation_bytes = static_cast<double>(kept);
  }
  for (auto& runner : runners) runner->block().zero_grad();
  planner::validate(profile);
  return profile;
}

StageActivations measure_stage_activations(const ModelSpec& spec, std::int64_t first, std::int64_t last,
                                           std::int64_t rows, std::uint64_t seed) {
  LOOM_CHECK(0 <= first && first < last && last <= spec.blocks(), "stage blocks [", first, ", ", last,
             ") outside model ", spec.name, " (", spec.blocks(), " blocks)");
  const Microbatch mb = read_microbatch(spec, rows, seed, Device::cpu());
  // The stage's input comes from outside it (the data, or a receive): not activations.
  const runtime::MicrobatchInfo info{0, 0, mb.loss_denominator};
  TensorList inputs = {mb.inputs};
  if (first > 0) {
    MemoryCategoryScope scope(MemoryCategory::communication);
    auto before = spec.build(0, first);
    before->initialize(seed);
    runtime::StageRunner upstream(*before, nullptr, seeded(seed));
    inputs = upstream.forward(0, inputs, Tensor(), info);
  }
  auto stage = spec.build(first, last);
  stage->initialize(seed);
  LayerPtr loss = last == spec.blocks() ? spec.make_loss() : nullptr;
  runtime::StageRunner runner(*stage, loss.get(), seeded(seed));

  const std::int64_t before = live(Device::cpu(), MemoryCategory::activations);
  reset_peak_memory();
  TensorList outputs = runner.forward(0, inputs, mb.targets, info);  // the loss value waits for backward
  if (loss) outputs.clear();  // the logits: only what the loss saved of them stays
  const std::int64_t peak = memory_stats().peak(MemoryCategory::activations) - before;
  StageActivations result;
  if (!loss) {
    result.output_bytes = bytes_of(outputs);
    outputs.clear();  // sent to the next stage
  }
  result.kept_bytes = live(Device::cpu(), MemoryCategory::activations) - before;
  result.transient_bytes = peak - result.kept_bytes;
  return result;
}

}  // namespace loom::apps
