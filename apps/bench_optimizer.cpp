// `loom bench optimizer [--json]`: time of one optimizer step (SGD, SGD with momentum, Adam,
// AdamW) over the parameters of an MLP, by default 784-2048x7-10 (26.8 M parameters, the size
// where a step's memory traffic, not its arithmetic, sets the pace). Each figure is the best of
// several steps after warm-up. scripts/bench_optimizer.py runs this next to torch.optim's
// single-tensor, foreach and fused Adam on the same shapes and threads.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/core/rng.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>
#include <loom/layers/linear.h>
#include <loom/layers/optimizer.h>
#include <loom/layers/optimizer_kind.h>

#include "commands.h"

namespace loom::apps {

namespace {

struct OptimizerBenchOptions {
  bool json = false;
  int threads = 0, warmup = 2, repeats = 10;
  std::int64_t inputs = 784, width = 2048, depth = 7, outputs = 10;
};

// The MLP's Linear layers (depth layers of `width`, then the output layer), with random gradients.
std::vector<std::unique_ptr<Linear>> mlp_layers(const OptimizerBenchOptions& o) {
  std::vector<std::unique_ptr<Linear>> layers;
  for (std::int64_t l = 0; l <= o.depth; ++l)
    layers.push_back(std::make_unique<Linear>(l == 0 ? o.inputs : o.width, l == o.depth ? o.outputs : o.width));
  for (std::size_t l = 0; l < layers.size(); ++l) {
    layers[l]->initialize(1, static_cast<std::int64_t>(l));
    for (const NamedParameter& p : layers[l]->parameters())
      rng::uniform(p.parameter->grad, 2, static_cast<std::uint64_t>(l), -1, 1);
  }
  return layers;
}

std::unique_ptr<Optimizer> make_optimizer(OptimizerKind kind, std::vector<NamedParameter> params) {
  switch (kind) {
    case OptimizerKind::sgd: return std::make_unique<Sgd>(std::move(params));
    case OptimizerKind::momentum: return std::make_unique<Sgd>(std::move(params), SgdOptions{.momentum = 0.9});
    case OptimizerKind::adam: return std::make_unique<Adam>(std::move(params));
    case OptimizerKind::adamw: break;
  }
  return std::make_unique<Adam>(std::move(params), AdamOptions{.weight_decay = 0.01, .decoupled_weight_decay = true});
}

void run(const OptimizerBenchOptions& o) {
  set_num_threads(o.threads > 0 ? o.threads : default_num_threads());
  auto layers = mlp_layers(o);
  std::vector<NamedParameter> params;
  for (std::size_t l = 0; l < layers.size(); ++l)
    for (const NamedParameter& p : trainable_parameters(*layers[l], std::to_string(l))) params.push_back(p);
  std::int64_t count = 0;
  for (const NamedParameter& p : params) count += p.parameter->value.numel();
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json)
    std::printf("%-10s %12s %12s %12s   (threads %d, best of %d after %d warm-up)\n", "optimizer", "parameters",
                "step ms", "median ms", num_threads(), o.repeats, o.warmup);
  for (const std::string_view name : kOptimizerKindNames) {
    const std::string kind(name);
    auto optimizer = make_optimizer(parse_optimizer_kind(name), params);
    std::vector<double> ms;
    for (int i = 0; i < o.warmup + o.repeats; ++i) {
      Stopwatch watch;
      optimizer->step(1e-6);  // a tiny lr keeps the weights (and so the timing) unchanged in effect
      if (i >= o.warmup) ms.push_back(watch.elapsed_ms());
    }
    std::sort(ms.begin(), ms.end());
    rows.push_back({{"optimizer", kind}, {"parameters", count}, {"threads", num_threads()}, {"step_ms", ms.front()},
                    {"median_ms", ms[ms.size() / 2]}});
    if (!o.json) std::printf("%-10s %12lld %12.3f %12.3f\n", kind.c_str(), static_cast<long long>(count), ms.front(),
                             ms[ms.size() / 2]);
  }
  if (o.json) std::printf("%s\n", rows.dump(1).c_str());
}

}  // namespace

void add_bench_optimizer_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("optimizer", "time of one SGD/momentum/Adam/AdamW step over an MLP's parameters");
  static OptimizerBenchOptions o;
  cmd->add_flag("--json", o.json, "print a JSON array of {optimizer, parameters, threads, step_ms, median_ms}");
  cmd->add_option("--threads", o.threads, "CPU threads (default: loom's default)");
  cmd->add_option("--warmup", o.warmup, "untimed steps before measuring")->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", o.repeats, "timed steps; the best and the median are reported")->check(CLI::PositiveNumber);
  cmd->add_option("--inputs", o.inputs, "MLP input features")->check(CLI::PositiveNumber);
  cmd->add_option("--width", o.width, "MLP hidden width")->check(CLI::PositiveNumber);
  cmd->add_option("--depth", o.depth, "MLP hidden layers")->check(CLI::PositiveNumber);
  cmd->add_option("--outputs", o.outputs, "MLP outputs")->check(CLI::PositiveNumber);
  cmd->callback([] { run(o); });
}

}  // namespace loom::apps
