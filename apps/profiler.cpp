// The block profiler and the stage activation probe (see profiler.h).
#include "profiler.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include <loom/base/error.h>
#include <loom/core/memory.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>
#include <loom/layers/optimizer.h>
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

std::unique_ptr<Dataset> open_synthetic(const ModelSpec& spec, std::int64_t rows, std::uint64_t seed) {
  LOOM_CHECK(rows >= 1, "the micro-batch must hold at least one sample, got ", rows);
  auto data = open_dataset("synthetic", DatasetSplit::train, spec.data, seed);
  LOOM_CHECK(rows <= data->size(), "a micro-batch of ", rows, " samples is larger than the synthetic dataset (",
             data->size(), ")");
  return data;
}

// Samples first.. of `data`, as the executor reads a micro-batch.
Microbatch read_rows(const ModelSpec& spec, Dataset& data, std::int64_t first, std::int64_t rows, Device device) {
  std::vector<std::int64_t> indices(static_cast<std::size_t>(rows));
  std::iota(indices.begin(), indices.end(), first % (data.size() - rows + 1));
  Microbatch mb;
  data.read(indices, mb.inputs, mb.targets);
  mb.inputs = mb.inputs.to(device);
  if (mb.targets.defined()) mb.targets = mb.targets.to(device);
  mb.loss_denominator = static_cast<double>(rows) * static_cast<double>(spec.targets_per_sample);
  return mb;
}

Microbatch read_microbatch(const ModelSpec& spec, std::int64_t rows, std::uint64_t seed, Device device) {
  return read_rows(spec, *open_synthetic(spec, rows, seed), 0, rows, device);
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
  // The two halves a zero-bubble schedule runs apart: the input gradient, then the weight gradient.
  TensorList backward_input(const TensorList& grad_outputs) { return runner_.backward_input(0, grad_outputs); }
  void backward_weight() { runner_.backward_weight(0); }
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

using Runners = std::vector<std::unique_ptr<BlockRunner>>;

// Milliseconds per block of each kind of pass, one entry per timed pass.
struct BlockTimes {
  explicit BlockTimes(std::size_t blocks) : forward(blocks), backward(blocks), input(blocks), weight(blocks) {}
  std::vector<std::vector<double>> forward, backward, input, weight;
};

// A pass: every block's forward, then every backward (fused), or, `split`, every BI and then every BW (as a
// zero-bubble kind runs a chunk). `times` null: a warm-up pass.
void run_pass(Runners& runners, const Microbatch& mb, Device device, bool split, BlockTimes* times) {
  const std::size_t blocks = runners.size();
  auto keep = [&](std::vector<std::vector<double>> BlockTimes::*kind, std::size_t i, double ms) {
    if (times) (times->*kind)[i].push_back(ms);
  };
  TensorList x = {mb.inputs};
  for (std::size_t i = 0; i < blocks; ++i) {
    const double ms = timed_ms(device, [&] { x = runners[i]->forward(x); });
    keep(&BlockTimes::forward, i, ms);
  }
  TensorList grad;
  for (std::size_t i = blocks; i-- > 0;) {
    if (!split) {
      const double ms = timed_ms(device, [&] { grad = runners[i]->backward(grad); });
      keep(&BlockTimes::backward, i, ms);
      continue;
    }
    const double ms = timed_ms(device, [&] { grad = runners[i]->backward_input(grad); });
    keep(&BlockTimes::input, i, ms);
  }
  for (std::size_t i = blocks; split && i-- > 0;) {
    const double ms = timed_ms(device, [&] { runners[i]->backward_weight(); });
    keep(&BlockTimes::weight, i, ms);
  }
}

// What each block holds only while it runs, and between its BI and BW.
struct BlockWork {
  std::int64_t forward = 0, backward = 0, input = 0, weight = 0, split_held = 0;
};

std::int64_t live_total(Device device) { return memory_stats(device).live_bytes; }

// One fused pass and one split pass, reading the ledger's peak around every block: its forward's peak above
// what is live after it (its kept bytes and outputs included), its backward's, BI's and BW's peaks above what
// was live before each (its kept bytes and output gradient included), and what its BI leaves live beyond its
// input gradient, less what it freed: negative where it frees more of its activations than it leaves for its BW.
std::vector<BlockWork> probe_work(Runners& runners, const Microbatch& mb, Device device) {
  std::vector<BlockWork> work(runners.size());
  for (bool split : {false, true}) {
    TensorList x = {mb.inputs};
    for (std::size_t i = 0; i < runners.size(); ++i) {
      reset_peak_memory(device);
      x = runners[i]->forward(x);
      if (!split) work[i].forward = std::max<std::int64_t>(0, memory_stats(device).peak_bytes - live_total(device));
    }
    x.clear();
    TensorList grad;
    for (std::size_t i = runners.size(); i-- > 0;) {
      const std::int64_t before = live_total(device), grad_out = bytes_of(grad);
      reset_peak_memory(device);
      grad = split ? runners[i]->backward_input(grad) : runners[i]->backward(grad);
      (split ? work[i].input : work[i].backward) = std::max<std::int64_t>(0, memory_stats(device).peak_bytes - before);
      if (split)
        work[i].split_held = live_total(device) - before - bytes_of(grad) + grad_out;
    }
    grad.clear();
    for (std::size_t i = runners.size(); split && i-- > 0;) {
      const std::int64_t before = live_total(device);
      reset_peak_memory(device);
      runners[i]->backward_weight();
      work[i].weight = std::max<std::int64_t>(0, memory_stats(device).peak_bytes - before);
    }
  }
  for (auto& runner : runners) runner->release();
  return work;
}

// An optimizer of `kind` ("adam", or sgd with loom train's default momentum) over every trainable
// parameter of the blocks, and their bytes.
std::pair<std::unique_ptr<Optimizer>, double> make_optimizer(Runners& runners, const std::string& kind) {
  std::vector<NamedParameter> parameters;
  double bytes = 0;
  for (std::size_t i = 0; i < runners.size(); ++i) {
    std::string prefix = "b";  // built in steps: g++ 12 warns (-Wrestrict, falsely) on "b" + ... + "."
    prefix += std::to_string(i);
    prefix += '.';
    for (NamedParameter& p : runners[i]->block().parameters(prefix)) {
      if (!p.parameter->trainable) continue;
      bytes += static_cast<double>(p.parameter->value.nbytes());
      parameters.push_back(p);
    }
  }
  if (parameters.empty()) return {nullptr, 0.0};
  if (kind == "adam") return {std::make_unique<Adam>(parameters), bytes};
  return {std::make_unique<Sgd>(parameters, SgdOptions{0.9}), bytes};
}

// Milliseconds of one step of `optimizer` per MB of the model's parameters (median of `repeats`;
// learning rate 0, so the weights stay as they are).
double step_ms_per_mb(Runners& runners, const std::string& optimizer, int repeats, Device device) {
  auto [step, bytes] = make_optimizer(runners, optimizer);
  if (!step || bytes <= 0) return 0;
  std::vector<double> ms;
  for (int r = 0; r < repeats + 1; ++r) {
    const double t = timed_ms(device, [&, &opt = step] { opt->step(0.0); });
    if (r > 0) ms.push_back(t);
  }
  return median(ms) / (bytes / 1e6);
}

// The data's share: bytes of a micro-batch's inputs and targets, and the median time to read one from
// a dataset opened once (as training opens it; opening it is not a micro-batch's cost).
void profile_data(const ModelSpec& spec, const ProfileOptions& o, const Microbatch& mb, Device device,
                  planner::Profile& profile) {
  profile.input_bytes = static_cast<double>(mb.inputs.nbytes());
  profile.target_bytes = mb.targets.defined() ? static_cast<double>(mb.targets.nbytes()) : 0.0;
  std::vector<double> ms;
  const auto data = open_synthetic(spec, o.microbatch, o.seed + 1);
  for (int r = 0; r < std::max(3, o.repeats); ++r)
    ms.push_back(timed_ms(device, [&] { (void)read_rows(spec, *data, (r + 1) * o.microbatch, o.microbatch, device); }));
  profile.data_ms = median(ms);
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
  // Blocks are timed inside whole passes (every forward, then every backward), as a stage runs them: a block
  // timed alone, over and over, finds its weights in cache and looks faster.
  for (int w = 0; w < std::max(o.warmup, 1); ++w) run_pass(runners, mb, device, w % 2 == 1, nullptr);
  std::vector<BlockMemory> memory;
  TensorList inputs = {mb.inputs};
  for (std::int64_t i = 0; i < blocks; ++i) {
    memory.push_back(probe_block(*runners[i], inputs, device));
    inputs = runners[i]->forward(inputs);
    runners[i]->release();
  }
  inputs.clear();
  const std::vector<BlockWork> work = probe_work(runners, mb, device);
  // Between passes an Adam step (learning rate 0: the weights stay), which leaves the caches as a
  // training step leaves them for the next forward: without it, the weights of a model that fits
  // in the last-level cache are found there and its forward looks 7-8% faster than in training.
  BlockTimes times(static_cast<std::size_t>(blocks));
  const std::unique_ptr<Optimizer> between = make_optimizer(runners, "adam").first;
  for (int r = 0; r < o.repeats; ++r)
    for (bool split : {false, true}) {
      if (between) between->step(0.0);
      run_pass(runners, mb, device, split, &times);
    }
  for (std::int64_t i = 0; i < blocks; ++i) {
    planner::LayerProfile layer;
    layer.name = spec.block_names.at(static_cast<std::size_t>(i));
    const auto b = static_cast<std::size_t>(i);
    planner::LayerCost& cost = layer.cost;
    cost.forward_ms = median(times.forward[b]);
    cost.backward_ms = median(times.backward[b]);
    cost.boundary_bytes = static_cast<double>(memory[b].output_bytes);
    cost.backward_input_ms = median(times.input[b]);
    cost.backward_weight_ms = median(times.weight[b]);
    cost.forward_workspace_bytes = static_cast<double>(work[b].forward);
    cost.backward_workspace_bytes = static_cast<double>(work[b].backward);
    cost.input_workspace_bytes = static_cast<double>(work[b].input);
    cost.weight_workspace_bytes = static_cast<double>(work[b].weight);
    cost.split_held_bytes = static_cast<double>(work[b].split_held);
    layer.parameter_bytes = static_cast<double>(runners[i]->block().parameter_bytes());
    profile.layers.push_back(layer);
  }
  // Each block is charged what it made and something keeps: its own kept bytes, plus its outputs
  // when only the next block keeps them; of that, what the next block keeps stays when this one is
  // recomputed and the next one is not. Its BI frees at most all of that.
  for (std::int64_t i = 0; i < blocks; ++i) {
    const BlockMemory& m = memory[static_cast<std::size_t>(i)];
    std::int64_t kept = m.kept_own, next_kept = 0;
    if (i + 1 < blocks) {
      const std::int64_t next = memory[static_cast<std::size_t>(i + 1)].input_kept;
      kept += std::max<std::int64_t>(0, next - m.outputs_kept_by_self);
      next_kept = std::clamp<std::int64_t>(next, 0, std::min(m.output_bytes, kept));
    }
    planner::LayerCost& cost = profile.layers[static_cast<std::size_t>(i)].cost;
    cost.activation_bytes = static_cast<double>(kept);
    cost.next_kept_bytes = static_cast<double>(next_kept);
    // What a BI frees beyond the block's charged activations (the last block's loss keeps its own)
    // is not the stage's to count.
    cost.split_held_bytes = std::max(cost.split_held_bytes, -cost.activation_bytes);
  }
  profile_data(spec, o, mb, device, profile);
  for (const char* optimizer : {"sgd", "adam"})
    profile.step_ms_per_mb[optimizer] = step_ms_per_mb(runners, optimizer, o.repeats, device);
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
