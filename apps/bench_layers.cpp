// `loom bench layers [--json]`: forward+backward time of loom's layers next to PyTorch's CPU
// implementation on identical shapes and thread counts, in the same invocation: the command keeps
// /usr/bin/python3 workers (Debian's python3-torch; --python another) and alternates loom's runs with
// PyTorch's one by one, so both meet the same machine conditions. --device cuda puts both on GPU 0
// (loom's CUDA layers, PyTorch's module on cuda:0), each run timed between device synchronisations. Each figure is the median (--best: the minimum) of
// several runs after warm-up; ratio = loom_ms / torch_ms (below 1: loom faster). Both sides compute the input gradient
// and accumulate parameter gradients, in training mode.
#include <algorithm>
#include <array>
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

#include <loom/core/device.h>
#include <loom/base/error.h>
#include <loom/core/rng.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>
#include <loom/layers/attention.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/linear.h>
#include <loom/layers/lstm.h>
#include <loom/layers/transformer.h>

#include "commands.h"
#include "median.h"

namespace loom::apps {

namespace {

// The PyTorch side: a long-lived worker that builds the same layer for each case and times one
// forward + backward per request, so loom's and PyTorch's runs alternate one by one.
constexpr const char* kTorchWorker = R"PY(
import json, sys, time
import torch

torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
device = torch.device(sys.argv[2])
sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

def build(c):
    k = c["layer"]
    if k == "linear":
        return torch.nn.Linear(c["in"], c["out"])
    if k == "conv2d":
        return torch.nn.Conv2d(c["in"], c["out"], c["kernel"], stride=c.get("stride", 1), padding=c["padding"],
                               groups=c.get("groups", 1))
    if k == "lstm":
        return torch.nn.LSTM(c["in"], c["hidden"], c["layers"], batch_first=True)
    if k == "attention":
        return torch.nn.MultiheadAttention(c["embed"], c["heads"], batch_first=True)
    if k == "encoder":
        return torch.nn.TransformerEncoderLayer(c["embed"], c["heads"], c["ff"], dropout=c["dropout"],
                                                activation=c["activation"], batch_first=True,
                                                norm_first=c.get("norm_first", False),
                                                layer_norm_eps=c.get("eps", 1e-5))
    raise ValueError(k)

def causal_mask(c):
    length = c["x"][1]
    return torch.triu(torch.full((length, length), float("-inf"), device=device), diagonal=1)

def forward(module, c, x, mask):
    kind = c["layer"]
    if kind == "lstm":
        return module(x)[0]
    if kind == "attention":
        return module(x, x, x, need_weights=False)[0]
    if kind == "encoder" and mask is not None:
        return module(x, src_mask=mask, is_causal=True)
    return module(x)

for line in sys.stdin:
    request = json.loads(line)
    if "case" in request:
        c = request["case"]
        module = build(c).to(device).train()
        mask = causal_mask(c) if c.get("causal") else None
        x = (torch.rand(c["x"], device=device) * 2 - 1).requires_grad_(True)
        with torch.no_grad():
            g = torch.ones_like(forward(module, c, x, mask))
        print("ready", flush=True)
    else:
        x.grad = None
        sync()
        start = time.perf_counter()
        forward(module, c, x, mask).backward(g)
        sync()
        print((time.perf_counter() - start) * 1000.0, flush=True)
)PY";

struct BenchCase {
  std::string layer;  // row label
  std::string shape;  // what the row measures, readable
  std::function<LayerPtr()> build;
  Shape input;
  nlohmann::json torch;  // the same layer for the script
};

// One Conv2d row: k x k, stride, padding k / 2, on x[images, in, side, side].
BenchCase conv_case(const std::string& model, std::int64_t images, std::int64_t in, std::int64_t out, std::int64_t k,
                    std::int64_t stride, std::int64_t side, std::int64_t groups = 1) {
  const std::int64_t pad = k / 2;
  std::string shape = std::to_string(k) + "x" + std::to_string(k) + (stride > 1 ? " s" + std::to_string(stride) : "") +
                      " " + std::to_string(in) + "->" + std::to_string(out) + (groups > 1 ? " dw" : "") + " on [" +
                      std::to_string(images) + "," + std::to_string(in) + "," + std::to_string(side) + "," +
                      std::to_string(side) + "]";
  const Conv2dOptions o{.in_channels = in, .out_channels = out, .kernel = k, .stride = stride, .padding = pad,
                        .groups = groups};
  return {"Conv2d " + model, shape, [o] { return std::make_unique<Conv2d>(o); }, Shape{images, in, side, side},
          {{"layer", "conv2d"}, {"in", in}, {"out", out}, {"kernel", k}, {"stride", stride}, {"padding", pad},
           {"groups", groups}}};
}

// Every distinct convolution of VGG-19 and ResNet-50 (torchvision's, stride on the 3x3) at 224x224,
// and depthwise 3x3/5x5/7x7 as in AmoebaNet's separable convolutions; rows that appear in both
// models are listed once.
std::vector<BenchCase> model_conv_cases(std::int64_t images) {
  std::vector<BenchCase> out;
  for (auto [in, o, side] : std::vector<std::array<std::int64_t, 3>>{{3, 64, 224}, {64, 64, 224}, {64, 128, 112},
                                                                     {128, 128, 112}, {128, 256, 56}, {256, 256, 56},
                                                                     {256, 512, 28}, {512, 512, 28}, {512, 512, 14}})
    out.push_back(conv_case("VGG-19", images, in, o, 3, 1, side));
  out.push_back(conv_case("ResNet-50", images, 3, 64, 7, 2, 224));
  for (auto [in, o, k, stride, side] : std::vector<std::array<std::int64_t, 5>>{
           {64, 64, 1, 1, 56},     {64, 64, 3, 1, 56},     {64, 256, 1, 1, 56},    {256, 64, 1, 1, 56},
           {256, 128, 1, 1, 56},   {128, 128, 3, 2, 56},   {128, 512, 1, 1, 28},   {256, 512, 1, 2, 56},
           {512, 128, 1, 1, 28},   {128, 128, 3, 1, 28},   {512, 256, 1, 1, 28},   {256, 256, 3, 2, 28},
           {256, 1024, 1, 1, 14},  {512, 1024, 1, 2, 28},  {1024, 256, 1, 1, 14},  {256, 256, 3, 1, 14},
           {1024, 512, 1, 1, 14},  {512, 512, 3, 2, 14},   {512, 2048, 1, 1, 7},   {1024, 2048, 1, 2, 14},
           {2048, 512, 1, 1, 7},   {512, 512, 3, 1, 7}})
    out.push_back(conv_case("ResNet-50", images, in, o, k, stride, side));
  for (std::int64_t k : {3, 5, 7}) out.push_back(conv_case("depthwise", images, 128, 128, k, 1, 28, 128));
  return out;
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

// One TransformerEncoderLayer row (GELU) on x[batch, length, o.d_model].
BenchCase encoder_case(const std::string& label, const TransformerOptions& o, std::int64_t batch, std::int64_t length) {
  std::string shape = "x[" + std::to_string(batch) + "," + std::to_string(length) + "," + std::to_string(o.d_model) +
                      "] " + std::to_string(o.heads) + " heads, ff " + std::to_string(o.d_ff) +
                      (o.norm_first ? ", pre-LN" : "") + (o.causal ? ", causal" : "");
  return {label, shape, [=] { return std::make_unique<TransformerEncoderLayer>(o); }, Shape{batch, length, o.d_model},
          {{"layer", "encoder"}, {"embed", o.d_model}, {"heads", o.heads}, {"ff", o.d_ff}, {"dropout", o.dropout},
           {"activation", "gelu"}, {"norm_first", o.norm_first}, {"causal", o.causal}, {"eps", o.layer_norm_eps}}};
}

BenchCase linear_case(const std::string& label, std::int64_t rows, std::int64_t in, std::int64_t out) {
  return {label, "x[" + std::to_string(rows) + "," + std::to_string(in) + "] -> " + std::to_string(out),
          [=] { return std::make_unique<Linear>(in, out); }, Shape{rows, in},
          {{"layer", "linear"}, {"in", in}, {"out", out}}};
}

// The transformer and RNN layers of the sequence presets at their published widths (--paper-blocks):
// one BERT-48 / XLNet-36-width encoder layer (post-LN, as BERT), one GPT-2-small layer (pre-LN,
// causal), GNMT-16's LSTM layer and the big GEMMs around them, at batch 8 (GNMT: 32 sentences).
std::vector<BenchCase> paper_block_cases() {
  std::vector<BenchCase> out;
  TransformerOptions bert{.d_model = 1024, .heads = 16, .d_ff = 4096, .dropout = 0.1,
                          .activation = ActivationKind::gelu, .layer_norm_eps = 1e-12};
  out.push_back(encoder_case("BERT-48 layer", bert, 8, 512));
  TransformerOptions gpt{.d_model = 768, .heads = 12, .d_ff = 3072, .dropout = 0.0,
                         .activation = ActivationKind::gelu, .norm_first = true, .causal = true};
  out.push_back(encoder_case("GPT-2 small layer", gpt, 8, 256));
  out.push_back({"GNMT-16 LSTM", "x[32,35,1024] hidden 1024, 1 layer",
                 [] { return std::make_unique<LSTM>(LstmOptions{.input_size = 1024, .hidden_size = 1024}); },
                 Shape{32, 35, 1024}, {{"layer", "lstm"}, {"in", 1024}, {"hidden", 1024}, {"layers", 1}}});
  out.push_back(linear_case("BERT-48 FFN Linear", 8 * 512, 1024, 4096));
  out.push_back(linear_case("BERT MLM decoder", 2 * 512, 1024, 30522));
  return out;
}

// /usr/bin/python3 (Debian's python3-torch) running kTorchWorker, spoken to a line at a time.
class TorchWorker {
 public:
  // `passive`: OMP_WAIT_POLICY=passive. With two pools (its OpenMP one and OpenBLAS's), PyTorch's
  // OpenMP threads spinning between regions starve OpenBLAS's (an LSTM ran 3x slower at 2 threads
  // than at 1), while oneDNN's convolution is ~10% faster with spinning threads: the bench runs
  // PyTorch both ways and reports its better time per row.
  TorchWorker(int threads, bool passive, const std::string& python, Device device) : python_(python) {
    int to_child[2], from_child[2];
    // Close-on-exec, so that a second worker does not inherit (and keep open) this one's pipes.
    LOOM_CHECK(::pipe2(to_child, O_CLOEXEC) == 0 && ::pipe2(from_child, O_CLOEXEC) == 0,
               "bench layers: cannot create pipes");
    const std::string n = std::to_string(threads), where = device.is_cuda() ? "cuda:0" : "cpu";
    pid_ = ::fork();
    LOOM_CHECK(pid_ >= 0, "bench layers: cannot start ", python);
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
      // loom itself runs with OMP_WAIT_POLICY=passive (main.cpp); the default worker gets OpenMP's default.
      if (passive)
        ::setenv("OMP_WAIT_POLICY", "passive", 1);
      else
        ::unsetenv("OMP_WAIT_POLICY");
      // argv[0] is the interpreter's path: a venv's python finds its site-packages from it.
      ::execl(python.c_str(), python.c_str(), "-c", kTorchWorker, n.c_str(), where.c_str(), static_cast<char*>(nullptr));
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
               "bench layers: the PyTorch side stopped; it needs ", python_,
               " with torch (Debian's python3-torch for /usr/bin/python3; CUDA support for --device cuda)");
    return line;
  }

 private:
  std::string python_;
  pid_t pid_ = -1;
  std::FILE* to_ = nullptr;
  std::FILE* from_ = nullptr;
};

// One loom forward + backward of a fresh context on `device`, in milliseconds (the device drained
// before and after).
struct LoomRunner {
  LoomRunner(const BenchCase& c, Device device) : layer(c.build()), x(Tensor::empty(c.input)), device(device) {
    layer->initialize(1, 0, "bench");
    layer->to(device);
    rng::uniform(x, 1, 1, -1, 1);
    x = x.to(device);
    for (const Shape& s : layer->output_shapes({c.input}))
      grads.push_back(grads.empty() ? Tensor::full(s, 1.0, DType::f32, device) : Tensor());
  }
  double run() {
    Context ctx;
    ctx.step = step++;
    synchronize(device);
    Stopwatch watch;
    layer->forward({x}, ctx);
    layer->backward(grads, ctx);
    synchronize(device);
    return watch.elapsed_ms();
  }
  LayerPtr layer;
  Tensor x;
  TensorList grads;
  Device device;
  std::uint64_t step = 0;
};

struct CaseTimes {
  double loom_ms, torch_ms;
  std::string torch_setting;        // which PyTorch run was faster
  std::vector<double> forced_ms;    // per forced Conv2d path (--paths), negative where it does not apply
};

// LOOM_CONV_PATH for the runs of one loom side ("" leaves Conv2d's own rule).
void force_conv_path(const std::string& path) {
  if (path.empty())
    ::unsetenv("LOOM_CONV_PATH");
  else
    ::setenv("LOOM_CONV_PATH", path.c_str(), 1);
}

// The CPU path a Conv2d row runs (oneDNN, winograd, im2col) under the current LOOM_CONV_PATH; ""
// for other layers.
std::string loom_path(const BenchCase& c) {
  const LayerPtr layer = c.build();
  const auto* conv = dynamic_cast<const Conv2d*>(layer.get());
  return conv ? conv->cpu_path(DType::f32) : "";
}

// Medians (or minima) for one case: loom's runs (its own choice, then each forced path of `paths`
// that applies) alternate with those of both PyTorch workers, each side taking every position in
// turn, so that all meet the same machine conditions however the load drifts.
CaseTimes time_case(const BenchCase& c, Device device, std::vector<TorchWorker*>& torch, int warmup, int repeats,
                    bool best, const std::vector<std::string>& paths) {
  nlohmann::json spec = c.torch;
  spec["x"] = c.input.vec();
  for (TorchWorker* worker : torch) {
    const std::string ready = worker->ask(nlohmann::json{{"case", spec}}.dump());
    LOOM_CHECK(ready.rfind("ready", 0) == 0, "bench layers: the PyTorch side answered '", ready, "' to a new case");
  }
  std::vector<std::string> loom_sides{""};  // loom side 0: Conv2d's own rule
  for (const std::string& path : paths) {
    force_conv_path(path);
    if (loom_path(c) == path) loom_sides.push_back(path);
  }
  force_conv_path("");
  LoomRunner loom(c, device);
  const int loom_count = static_cast<int>(loom_sides.size()), sides = loom_count + static_cast<int>(torch.size());
  std::vector<std::vector<double>> times(static_cast<std::size_t>(sides));
  for (int i = 0; i < warmup + repeats; ++i) {
    for (int k = 0; k < sides; ++k) {
      const int side = (i + k) % sides;
      double ms = 0;
      if (side < loom_count) {
        force_conv_path(loom_sides[static_cast<std::size_t>(side)]);
        ms = loom.run();
        force_conv_path("");
      } else {
        ms = std::stod(torch[static_cast<std::size_t>(side - loom_count)]->ask("{}"));
      }
      if (i >= warmup) times[static_cast<std::size_t>(side)].push_back(ms);
    }
  }
  auto statistic = [best](const std::vector<double>& v) { return best ? *std::min_element(v.begin(), v.end()) : median(v); };
  CaseTimes result{statistic(times[0]), 0.0, "", {}};
  for (const std::string& path : paths) {
    const auto at = std::find(loom_sides.begin(), loom_sides.end(), path);
    result.forced_ms.push_back(at == loom_sides.end() ? -1.0 : statistic(times[static_cast<std::size_t>(at - loom_sides.begin())]));
  }
  for (int side = loom_count; side < sides; ++side) {
    const double ms = statistic(times[static_cast<std::size_t>(side)]);
    if (result.torch_setting.empty() || ms < result.torch_ms) {
      result.torch_ms = ms;
      result.torch_setting = side == loom_count ? "default" : "passive";
    }
  }
  return result;
}

struct LayersBenchOptions {
  bool json = false, quick = false, conv_shapes = false, paper_blocks = false, best = false;
  int threads = 0, warmup = 2, repeats = 9;
  std::string device = "cpu";             // cpu or cuda (both sides on GPU 0)
  std::string python = "/usr/bin/python3";  // the PyTorch side's interpreter
  std::string filter;               // only rows whose layer or shape contains it
  std::vector<std::string> paths;   // Conv2d paths to time as well (LOOM_CONV_PATH values)
};

// "  im2col 12.345" per forced path ("-" where it does not apply), for the text table.
std::string forced_columns(const std::vector<std::string>& paths, const std::vector<double>& ms) {
  std::string text;
  char cell[64];
  for (std::size_t p = 0; p < paths.size(); ++p) {
    if (ms[p] < 0)
      std::snprintf(cell, sizeof cell, "  %s %10s", paths[p].c_str(), "-");
    else
      std::snprintf(cell, sizeof cell, "  %s %10.3f", paths[p].c_str(), ms[p]);
    text += cell;
  }
  return text;
}

void run(const LayersBenchOptions& o) {
  set_num_threads(o.threads > 0 ? o.threads : default_num_threads());
  const Device device = resolve_device_flag(o.device, 0);
  LOOM_CHECK(o.paths.empty() || device.is_cpu(), "bench layers --paths: Conv2d's CPU paths, not with --device ", o.device);
  LOOM_CHECK(!(o.conv_shapes && o.paper_blocks), "bench layers: --conv-shapes and --paper-blocks are two row sets; give one");
  const std::vector<BenchCase> list = o.conv_shapes    ? model_conv_cases(o.quick ? 2 : 8)
                                      : o.paper_blocks ? paper_block_cases()
                                                       : cases(o.quick);
  std::signal(SIGPIPE, SIG_IGN);  // a worker that died (no torch?) must give our error, not kill us
  std::vector<std::unique_ptr<TorchWorker>> workers;
  workers.push_back(std::make_unique<TorchWorker>(num_threads(), false, o.python, device));
  if (num_threads() > 1 && device.is_cpu())  // one thread, or a GPU: no pools to tune
    workers.push_back(std::make_unique<TorchWorker>(num_threads(), true, o.python, device));
  std::vector<TorchWorker*> torch;
  for (auto& worker : workers) torch.push_back(worker.get());
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json)
    std::printf("%-18s %-34s %10s %10s %10s  %-8s %-7s %s  (%s, threads %d, %s of %d after %d warm-up; time/torch "
                "below 1: loom is faster)\n", "layer",
                "shape", "loom ms", "torch ms", "time/torch", "loom", "torch", o.paths.empty() ? "" : "forced paths (ms)",
                device.str().c_str(), num_threads(), o.best ? "best" : "median", o.repeats, o.warmup);
  for (const BenchCase& c : list) {
    if (!o.filter.empty() && (c.layer + " " + c.shape).find(o.filter) == std::string::npos) continue;
    const CaseTimes t = time_case(c, device, torch, o.warmup, o.repeats, o.best, o.paths);
    const double ratio = t.loom_ms / t.torch_ms;
    const std::string path = device.is_cpu() ? loom_path(c) : "";  // the CPU paths are the CPU's
    nlohmann::json row{{"layer", c.layer},          {"shape", c.shape}, {"loom_ms", t.loom_ms},
                       {"torch_ms", t.torch_ms},    {"ratio", ratio},   {"loom_path", path},
                       {"torch_setting", t.torch_setting}};
    for (std::size_t p = 0; p < o.paths.size(); ++p)
      if (t.forced_ms[p] >= 0) row[o.paths[p] + "_ms"] = t.forced_ms[p];
    rows.push_back(row);
    if (!o.json) {
      std::printf("%-18s %-34s %10.3f %10.3f %10.2f  %-8s %-7s%s\n", c.layer.c_str(), c.shape.c_str(), t.loom_ms,
                  t.torch_ms, ratio, path.empty() ? "-" : path.c_str(), t.torch_setting.c_str(),
                  forced_columns(o.paths, t.forced_ms).c_str());
      std::fflush(stdout);
    }
  }
  if (o.json) std::printf("%s\n", rows.dump(1).c_str());
}

}  // namespace

void add_bench_layers_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("layers", "forward+backward time of loom's layers next to PyTorch's (CPU or GPU)");
  static LayersBenchOptions o;
  cmd->add_flag("--json", o.json,
                "print a JSON array of {layer, shape, loom_ms, torch_ms, ratio, loom_path, torch_setting}");
  cmd->add_option("--threads", o.threads, "CPU threads for both loom and PyTorch (default: loom's default)");
  cmd->add_option("--device", o.device, "cpu, or cuda (both sides on GPU 0, each run timed between synchronisations)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--python", o.python, "the interpreter of the PyTorch side (needs torch; with CUDA for --device cuda)");
  cmd->add_option("--warmup", o.warmup, "untimed runs before measuring")->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", o.repeats, "timed runs; the median is reported")->check(CLI::PositiveNumber);
  cmd->add_option("--filter", o.filter, "only the rows whose layer and shape contain this text");
  cmd->add_option("--paths", o.paths,
                  "Conv2d paths to time as well, interleaved with the rest (im2col, winograd, onednn; each where "
                  "it applies)")->delimiter(',');
  cmd->add_flag("--best", o.best, "report each side's fastest run instead of the median");
  cmd->add_flag("--quick", o.quick, "small shapes (a smoke run, not the realistic sizes)");
  cmd->add_flag("--conv-shapes", o.conv_shapes,
                "instead of the default rows, every distinct convolution of VGG-19 and ResNet-50 and depthwise "
                "3x3/5x5/7x7, at batch 8 (LOOM_CONV_PATH=im2col|winograd|onednn forces loom's path)");
  cmd->add_flag("--paper-blocks", o.paper_blocks,
                "instead of the default rows, the sequence presets' layers at their published widths: a BERT-48 "
                "encoder layer (1024 wide, seq 512, batch 8), a GPT-2-small layer (768, causal, seq 256), GNMT's LSTM "
                "(hidden 1024, 35 steps, batch 32) and the big Linears");
  cmd->callback([] { run(o); });
}

}  // namespace loom::apps
