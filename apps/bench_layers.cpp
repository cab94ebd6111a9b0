// `loom bench layers [--json]`: forward+backward time of loom's layers next to PyTorch's CPU
// implementation on identical shapes and thread counts, in the same invocation: the command runs
// /usr/bin/python3 (Debian's python3-torch) on an embedded script right after timing loom on the
// same case, so both meet the same machine conditions. Each figure
// is the median of several runs after warm-up; ratio = loom_ms / torch_ms (below 1: loom faster).
// Both sides compute the input gradient and accumulate parameter gradients, in training mode.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <loom/core/error.h>
#include <loom/core/rng.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>
#include <loom/layers/attention.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/linear.h>
#include <loom/layers/lstm.h>
#include <loom/layers/transformer.h>

#include "commands.h"

namespace loom::apps {

namespace {

// The PyTorch side: builds the same layer for each case and times forward + backward.
constexpr const char* kTorchScript = R"PY(
import json, sys, time
import torch

cases = json.loads(sys.argv[1]); threads = int(sys.argv[2]); warmup = int(sys.argv[3]); repeats = int(sys.argv[4])
torch.set_num_threads(threads)
torch.manual_seed(0)

def build(c):
    k = c["layer"]
    if k == "linear":
        return torch.nn.Linear(c["in"], c["out"])
    if k == "conv2d":
        return torch.nn.Conv2d(c["in"], c["out"], c["kernel"], padding=c["padding"])
    if k == "lstm":
        return torch.nn.LSTM(c["in"], c["hidden"], c["layers"], batch_first=True)
    if k == "attention":
        return torch.nn.MultiheadAttention(c["embed"], c["heads"], batch_first=True)
    if k == "encoder":
        return torch.nn.TransformerEncoderLayer(c["embed"], c["heads"], c["ff"], dropout=c["dropout"],
                                                activation=c["activation"], batch_first=True)
    raise ValueError(k)

def forward(module, kind, x):
    if kind == "lstm":
        return module(x)[0]
    if kind == "attention":
        return module(x, x, x, need_weights=False)[0]
    return module(x)

results = []
for c in cases:
    module = build(c).train()
    x = torch.rand(c["x"]) * 2 - 1
    x.requires_grad_(True)
    with torch.no_grad():
        g = torch.ones_like(forward(module, c["layer"], x))
    times = []
    for i in range(warmup + repeats):
        x.grad = None
        start = time.perf_counter()
        forward(module, c["layer"], x).backward(g)
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1000.0)
    times.sort()
    results.append(times[len(times) // 2])
print(json.dumps(results))
)PY";

struct BenchCase {
  std::string layer;  // row label
  std::string shape;  // what the row measures, readable
  std::function<LayerPtr()> build;
  Shape input;
  nlohmann::json torch;  // the same layer for the script
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<BenchCase> cases(bool quick) {
  std::vector<BenchCase> out;
  const std::int64_t B = quick ? 4 : 32, T = quick ? 32 : 128, E = quick ? 256 : 512, ff = 4 * E;
  out.push_back({"Linear", "x[" + std::to_string(B * T) + "," + std::to_string(E) + "] -> " + std::to_string(ff),
                 [=] { return std::make_unique<Linear>(E, ff); }, Shape{B * T, E},
                 {{"layer", "linear"}, {"in", E}, {"out", ff}}});
  out.push_back({"Linear", "x[64,1024] -> 1024", [] { return std::make_unique<Linear>(1024, 1024); }, Shape{64, 1024},
                 {{"layer", "linear"}, {"in", 1024}, {"out", 1024}}});
  const std::int64_t images = quick ? 2 : 8, side = quick ? 28 : 56;
  out.push_back({"Conv2d", "3x3 64->64 on x[" + std::to_string(images) + ",64," + std::to_string(side) + "," +
                               std::to_string(side) + "] pad 1",
                 [] { return std::make_unique<Conv2d>(Conv2dOptions{.in_channels = 64, .out_channels = 64, .kernel = 3, .padding = 1}); },
                 Shape{images, 64, side, side},
                 {{"layer", "conv2d"}, {"in", 64}, {"out", 64}, {"kernel", 3}, {"padding", 1}}});
  const std::int64_t lstm_hidden = quick ? 256 : 512, lstm_steps = quick ? 16 : 32;
  out.push_back({"LSTM", "x[" + std::to_string(B) + "," + std::to_string(lstm_steps) + "," + std::to_string(lstm_hidden) +
                             "] hidden " + std::to_string(lstm_hidden) + ", 1 layer",
                 [=] { return std::make_unique<LSTM>(LstmOptions{.input_size = lstm_hidden, .hidden_size = lstm_hidden}); },
                 Shape{B, lstm_steps, lstm_hidden},
                 {{"layer", "lstm"}, {"in", lstm_hidden}, {"hidden", lstm_hidden}, {"layers", 1}}});
  const std::int64_t heads = 8, attention_batch = quick ? 2 : 16;
  out.push_back({"MultiHeadAttention",
                 "x[" + std::to_string(attention_batch) + "," + std::to_string(T) + "," + std::to_string(E) + "] heads 8",
                 [=] { return std::make_unique<MultiHeadAttention>(E, heads); }, Shape{attention_batch, T, E},
                 {{"layer", "attention"}, {"embed", E}, {"heads", heads}}});
  TransformerOptions o;
  o.d_model = E;
  o.heads = heads;
  o.d_ff = ff;
  o.dropout = 0.1;
  o.activation = ActivationKind::gelu;
  out.push_back({"TransformerEncoderLayer",
                 "x[" + std::to_string(attention_batch) + "," + std::to_string(T) + "," + std::to_string(E) + "] ff " +
                     std::to_string(ff) + ", gelu, dropout 0.1",
                 [=] { return std::make_unique<TransformerEncoderLayer>(o); }, Shape{attention_batch, T, E},
                 {{"layer", "encoder"}, {"embed", E}, {"heads", heads}, {"ff", ff}, {"dropout", 0.1}, {"activation", "gelu"}}});
  return out;
}

double time_loom(const BenchCase& c, int warmup, int repeats) {
  LayerPtr layer = c.build();
  layer->initialize(1, 0, "bench");
  Tensor x = Tensor::empty(c.input);
  rng::uniform(x, 1, 1, -1, 1);
  TensorList grads;
  for (const Shape& s : layer->output_shapes({c.input})) grads.push_back(grads.empty() ? Tensor::full(s, 1.0) : Tensor());
  std::vector<double> times;
  for (int i = 0; i < warmup + repeats; ++i) {
    Context ctx;
    ctx.step = static_cast<std::uint64_t>(i);
    Stopwatch watch;
    layer->forward({x}, ctx);
    layer->backward(grads, ctx);
    if (i >= warmup) times.push_back(watch.elapsed_ms());
  }
  return median(times);
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::vector<double> time_torch(const std::vector<BenchCase>& list, int threads, int warmup, int repeats) {
  nlohmann::json specs = nlohmann::json::array();
  for (const BenchCase& c : list) {
    nlohmann::json spec = c.torch;
    spec["x"] = c.input.vec();
    specs.push_back(spec);
  }
  const auto dir = std::filesystem::temp_directory_path();
  const std::string script = (dir / ("loom_bench_layers_" + std::to_string(::getpid()) + ".py")).string();
  const std::string output = script + ".out";
  std::ofstream(script) << kTorchScript;
  const std::string command = "/usr/bin/python3 " + shell_quote(script) + " " + shell_quote(specs.dump()) + " " +
                              std::to_string(threads) + " " + std::to_string(warmup) + " " + std::to_string(repeats) +
                              " > " + shell_quote(output);
  const int status = std::system(command.c_str());
  std::filesystem::remove(script);
  std::ifstream in(output);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(output);
  LOOM_CHECK(status == 0, "bench layers: the PyTorch side failed (status ", status,
             "); it needs /usr/bin/python3 with Debian's python3-torch");
  try {
    return nlohmann::json::parse(text.str()).get<std::vector<double>>();
  } catch (const nlohmann::json::exception&) {
    LOOM_THROW("bench layers: unreadable PyTorch timings: ", text.str());
  }
}

void run(bool json, int threads, int warmup, int repeats, bool quick) {
  set_num_threads(threads > 0 ? threads : default_num_threads());
  const std::vector<BenchCase> list = cases(quick);
  // Case by case, loom then PyTorch, so both see the same machine conditions.
  std::vector<double> loom_ms, torch_ms;
  for (const BenchCase& c : list) {
    loom_ms.push_back(time_loom(c, warmup, repeats));
    const std::vector<double> t = time_torch({c}, num_threads(), warmup, repeats);
    LOOM_CHECK(t.size() == 1, "bench layers: PyTorch returned ", t.size(), " timings for one case");
    torch_ms.push_back(t[0]);
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!json)
    std::printf("%-24s %-52s %10s %10s %7s   (threads %d, median of %d after %d warm-up)\n", "layer", "shape",
                "loom ms", "torch ms", "ratio", num_threads(), repeats, warmup);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const double ratio = loom_ms[i] / torch_ms[i];
    rows.push_back({{"layer", list[i].layer}, {"shape", list[i].shape}, {"loom_ms", loom_ms[i]},
                    {"torch_ms", torch_ms[i]}, {"ratio", ratio}});
    if (!json)
      std::printf("%-24s %-52s %10.3f %10.3f %7.2f\n", list[i].layer.c_str(), list[i].shape.c_str(), loom_ms[i],
                  torch_ms[i], ratio);
  }
  if (json) std::printf("%s\n", rows.dump(1).c_str());
}

}  // namespace

void add_bench_layers_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("layers", "forward+backward time of loom's layers next to PyTorch CPU");
  static bool json = false, quick = false;
  static int threads = 0, warmup = 2, repeats = 7;
  cmd->add_flag("--json", json, "print a JSON array of {layer, shape, loom_ms, torch_ms, ratio}");
  cmd->add_option("--threads", threads, "CPU threads for both loom and PyTorch (default: loom's default)");
  cmd->add_option("--warmup", warmup, "untimed runs before measuring")->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", repeats, "timed runs; the median is reported")->check(CLI::PositiveNumber);
  cmd->add_flag("--quick", quick, "small shapes (a smoke run, not the realistic sizes)");
  cmd->callback([] { run(json, threads, warmup, repeats, quick); });
}

}  // namespace loom::apps
