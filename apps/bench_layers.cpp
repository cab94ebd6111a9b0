// `loom bench layers [--json]`: forward+backward time of loom's layers next to PyTorch's CPU
// implementation on identical shapes and thread counts, in the same invocation: the command keeps
// /usr/bin/python3 workers (Debian's python3-torch) and alternates loom's runs with PyTorch's one by
// one, so both meet the same machine conditions. Each figure is the median of several runs after
// warm-up; ratio = loom_ms / torch_ms (below 1: loom faster). Both sides compute the input gradient
// and accumulate parameter gradients, in training mode.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
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

// The PyTorch side: a long-lived worker that builds the same layer for each case and times one
// forward + backward per request, so loom's and PyTorch's runs alternate one by one.
constexpr const char* kTorchWorker = R"PY(
import json, sys, time
import torch

torch.set_num_threads(int(sys.argv[1]))
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

for line in sys.stdin:
    request = json.loads(line)
    if "case" in request:
        c = request["case"]
        module = build(c).train()
        x = (torch.rand(c["x"]) * 2 - 1).requires_grad_(True)
        with torch.no_grad():
            g = torch.ones_like(forward(module, c["layer"], x))
        print("ready", flush=True)
    else:
        x.grad = None
        start = time.perf_counter()
        forward(module, c["layer"], x).backward(g)
        print((time.perf_counter() - start) * 1000.0, flush=True)
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

// /usr/bin/python3 (Debian's python3-torch) running kTorchWorker, spoken to a line at a time.
class TorchWorker {
 public:
  // `passive`: OMP_WAIT_POLICY=passive. With two pools (its OpenMP one and OpenBLAS's), PyTorch's
  // OpenMP threads spinning between regions starve OpenBLAS's (an LSTM ran 3x slower at 2 threads
  // than at 1), while oneDNN's convolution is ~10% faster with spinning threads: the bench runs
  // PyTorch both ways and reports its better time per row.
  TorchWorker(int threads, bool passive) {
    int to_child[2], from_child[2];
    // Close-on-exec, so that a second worker does not inherit (and keep open) this one's pipes.
    LOOM_CHECK(::pipe2(to_child, O_CLOEXEC) == 0 && ::pipe2(from_child, O_CLOEXEC) == 0,
               "bench layers: cannot create pipes");
    const std::string n = std::to_string(threads);
    pid_ = ::fork();
    LOOM_CHECK(pid_ >= 0, "bench layers: cannot start /usr/bin/python3");
    if (pid_ == 0) {
      ::dup2(to_child[0], STDIN_FILENO);
      ::dup2(from_child[1], STDOUT_FILENO);
      for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
      // torch.set_num_threads() bounds PyTorch's own pool but not the BLAS it was built against
      // (Debian's torch calls the system libblas, OpenBLAS with threads of its own): bound that too.
      // OpenBLAS's idle threads spin for 2^28 cycles after each call by default, which would slow
      // the run that follows; the shortest timeout leaves PyTorch's own figures unchanged.
      for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}) ::setenv(name, n.c_str(), 1);
      ::setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
      if (passive) ::setenv("OMP_WAIT_POLICY", "passive", 1);
      ::execl("/usr/bin/python3", "python3", "-c", kTorchWorker, n.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    to_ = ::fdopen(to_child[1], "w");
    from_ = ::fdopen(from_child[0], "r");
  }
  TorchWorker(const TorchWorker&) = delete;
  TorchWorker& operator=(const TorchWorker&) = delete;
  ~TorchWorker() {
    std::fclose(to_);  // end of input ends the worker
    std::fclose(from_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }

  // Sends one request line and returns the worker's one-line answer.
  std::string ask(const std::string& request) {
    std::fprintf(to_, "%s\n", request.c_str());
    std::fflush(to_);
    char line[256];
    LOOM_CHECK(std::fgets(line, sizeof line, from_) != nullptr,
               "bench layers: the PyTorch side stopped; it needs /usr/bin/python3 with Debian's python3-torch");
    return line;
  }

 private:
  pid_t pid_ = -1;
  std::FILE* to_ = nullptr;
  std::FILE* from_ = nullptr;
};

// One loom forward + backward of a fresh context, in milliseconds.
struct LoomRunner {
  explicit LoomRunner(const BenchCase& c) : layer(c.build()), x(Tensor::empty(c.input)) {
    layer->initialize(1, 0, "bench");
    rng::uniform(x, 1, 1, -1, 1);
    for (const Shape& s : layer->output_shapes({c.input})) grads.push_back(grads.empty() ? Tensor::full(s, 1.0) : Tensor());
  }
  double run() {
    Context ctx;
    ctx.step = step++;
    Stopwatch watch;
    layer->forward({x}, ctx);
    layer->backward(grads, ctx);
    return watch.elapsed_ms();
  }
  LayerPtr layer;
  Tensor x;
  TensorList grads;
  std::uint64_t step = 0;
};

struct CaseTimes {
  double loom_ms, torch_ms;
  std::string torch_setting;  // which PyTorch run was faster
};

// Medians for one case: loom's runs alternate with those of both PyTorch workers, each taking
// every position in turn, so that all meet the same machine conditions however the load drifts.
CaseTimes time_case(const BenchCase& c, std::vector<TorchWorker*>& torch, int warmup, int repeats) {
  nlohmann::json spec = c.torch;
  spec["x"] = c.input.vec();
  for (TorchWorker* worker : torch) {
    const std::string ready = worker->ask(nlohmann::json{{"case", spec}}.dump());
    LOOM_CHECK(ready.rfind("ready", 0) == 0, "bench layers: the PyTorch side answered '", ready, "' to a new case");
  }
  LoomRunner loom(c);
  const int sides = static_cast<int>(torch.size()) + 1;  // side 0 is loom
  std::vector<std::vector<double>> times(static_cast<std::size_t>(sides));
  for (int i = 0; i < warmup + repeats; ++i) {
    for (int k = 0; k < sides; ++k) {
      const int side = (i + k) % sides;
      const double ms = side == 0 ? loom.run() : std::stod(torch[static_cast<std::size_t>(side - 1)]->ask("{}"));
      if (i >= warmup) times[static_cast<std::size_t>(side)].push_back(ms);
    }
  }
  CaseTimes result{median(times[0]), 0.0, ""};
  for (int side = 1; side < sides; ++side) {
    const double ms = median(times[static_cast<std::size_t>(side)]);
    if (result.torch_setting.empty() || ms < result.torch_ms) {
      result.torch_ms = ms;
      result.torch_setting = side == 1 ? "default" : "passive";
    }
  }
  return result;
}

void run(bool json, int threads, int warmup, int repeats, bool quick) {
  set_num_threads(threads > 0 ? threads : default_num_threads());
  const std::vector<BenchCase> list = cases(quick);
  std::signal(SIGPIPE, SIG_IGN);  // a worker that died (no torch?) must give our error, not kill us
  std::vector<std::unique_ptr<TorchWorker>> workers;
  workers.push_back(std::make_unique<TorchWorker>(num_threads(), false));
  if (num_threads() > 1) workers.push_back(std::make_unique<TorchWorker>(num_threads(), true));  // else no pools
  std::vector<TorchWorker*> torch;
  for (auto& worker : workers) torch.push_back(worker.get());
  nlohmann::json rows = nlohmann::json::array();
  if (!json)
    std::printf("%-24s %-52s %10s %10s %7s  %s   (threads %d, median of %d after %d warm-up)\n", "layer", "shape",
                "loom ms", "torch ms", "ratio", "torch OMP wait", num_threads(), repeats, warmup);
  for (const BenchCase& c : list) {
    const CaseTimes t = time_case(c, torch, warmup, repeats);
    const double ratio = t.loom_ms / t.torch_ms;
    rows.push_back({{"layer", c.layer}, {"shape", c.shape}, {"loom_ms", t.loom_ms}, {"torch_ms", t.torch_ms},
                    {"ratio", ratio}, {"torch_setting", t.torch_setting}});
    if (!json) {
      std::printf("%-24s %-52s %10.3f %10.3f %7.2f  %s\n", c.layer.c_str(), c.shape.c_str(), t.loom_ms, t.torch_ms,
                  ratio, t.torch_setting.c_str());
      std::fflush(stdout);
    }
  }
  if (json) std::printf("%s\n", rows.dump(1).c_str());
}

}  // namespace

void add_bench_layers_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("layers", "forward+backward time of loom's layers next to PyTorch CPU");
  static bool json = false, quick = false;
  static int threads = 0, warmup = 2, repeats = 9;
  cmd->add_flag("--json", json, "print a JSON array of {layer, shape, loom_ms, torch_ms, ratio, torch_setting}");
  cmd->add_option("--threads", threads, "CPU threads for both loom and PyTorch (default: loom's default)");
  cmd->add_option("--warmup", warmup, "untimed runs before measuring")->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", repeats, "timed runs; the median is reported")->check(CLI::PositiveNumber);
  cmd->add_flag("--quick", quick, "small shapes (a smoke run, not the realistic sizes)");
  cmd->callback([] { run(json, threads, warmup, repeats, quick); });
}

}  // namespace loom::apps
