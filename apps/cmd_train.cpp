// `loom train`: pipelined + data-parallel training under mpirun (see training.h).
#include <filesystem>
#include <optional>
#include <fstream>
#include <sstream>

#include <loom/comm/link_shaper.h>
#include <loom/comm/mpi_session.h>
#include <loom/comm/topology.h>
#include <loom/layers/optimizer_kind.h>
#include <loom/planner/plan_file.h>
#include <loom/runtime/training_checkpoint.h>
#include <loom/runtime/weight_stash.h>
#include <loom/schedule/schedule_kind.h>

#include "commands.h"
#include "model_options.h"
#include "training.h"

namespace loom::apps {

namespace {
std::vector<int> parse_int_list(const std::string& text, const char* flag) {
  std::vector<int> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      values.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      LOOM_THROW(flag, ": '", item, "' is not an integer");
    }
  }
  return values;
}

// Whether a run uses `flag` (a long option name without dashes): what it does not use is left out
// of the file write_resolved_options writes, so that reading it back repeats the run.
bool run_uses(const std::string& flag, const TrainOptions& o, const runtime::ResolvedConfig& run) {
  using schedule::ScheduleKind;
  const std::optional<ScheduleKind> kind = run.pipeline.schedule;
  if (!o.plan.empty() && (flag == "stages" || flag == "replicas" || flag == "microbatches" || flag == "chunks"))
    return false;  // the plan says
  if (!o.schedule_file.empty() && ((flag == "stages" && o.stages == 0) || (flag == "chunks" && o.chunks == 0) ||
                                   (flag == "microbatches" && o.microbatches == 0)))
    return false;  // the schedule file says (the flag was not given)
  if (flag == "microbatches") return kind != ScheduleKind::pipedream;
  if (flag == "chunks") return kind && schedule::is_multi_chunk(*kind);
  if (flag == "loss-scale" || flag == "loss-scale-window") return run.precision.precision == runtime::Precision::fp16;
  if (flag == "reduce-backend" || flag == "boundary-backend") return !run.comm.device.device.is_cpu();
  return true;
}

// The resolved options of this run, as a file `--config` reads back: METRICS with the extension
// .options.toml (rank 0, before training, so a failed run has it too).
void write_resolved_options(const CLI::App& cmd, const TrainOptions& o, const runtime::ResolvedConfig& run) {
  if (o.metrics.empty() || comm::world_rank() != 0) return;
  const std::string path = std::filesystem::path(o.metrics).replace_extension(".options.toml").string();
  std::ofstream out(path);
  out << "# loom train options of this run; repeat it with: loom train --config " << path << "\n[train]\n";
  std::istringstream lines(cmd.config_to_str(true, false));
  for (std::string line; std::getline(lines, line);) {
    const bool unset = line.size() >= 3 && line.compare(line.size() - 3, 3, "=\"\"") == 0;  // no value given
    if (!unset && run_uses(line.substr(0, line.find('=')), o, run)) out << line << "\n";
  }
  LOOM_CHECK(out.good(), path, ": cannot write the run's options");
}

// --plan's values are the run's defaults: a flag not given takes the plan's value (and the options file
// repeats it); a flag given with another value is an error naming both and how to get a plan for it
// (`remake`), since the plan's predictions assume its own.
class PlanDefaults {
 public:
  PlanDefaults(CLI::App& cmd, const std::string& path) : cmd_(cmd), path_(path) {}
  void agree(const char* flag, const std::string& given, const std::string& planned, const char* what,
             const std::string& remake) const {
    LOOM_CHECK(given == planned, flag, " ", given, " and ", path_, "'s ", what, " ", planned, " disagree: drop ",
               flag, " (the plan says), or ", remake);
  }
  void take(const char* flag, std::string& value, const std::string& planned, const char* what,
            const std::string& remake) const {
    if (planned.empty()) return;  // an older plan file does not say
    if (cmd_.count(flag) > 0) return agree(flag, value, planned, what, remake);
    value = planned;
    cmd_.get_option(flag)->default_val(value);
  }
  bool given(const char* flag) const { return cmd_.count(flag) > 0; }

 private:
  CLI::App& cmd_;
  const std::string& path_;
};

// How to get a plan for a value: loom plan with `plan_flag` (when it has one), or for another model,
// profile it first.
std::string replan(const char* plan_flag, const std::string& value) {
  if (plan_flag == nullptr) return "make a plan for it (loom plan)";
  return loom::detail::concat("make a plan for it (loom plan ", plan_flag, " ", value, ")");
}
std::string reprofile(const char* flag, const std::string& value) {
  return loom::detail::concat("profile that model and plan it (loom profile ", flag, " ", value, ", then loom plan)");
}

// A plan from a loom profile names the preset, its size and every setting: they are the run's
// defaults, and --model, --size or --set that give another model are an error naming both.
void take_plan_model(const PlanDefaults& defaults, TrainOptions& o, const planner::Plan& plan) {
  const planner::PlanAssumptions& a = plan.assumptions;
  if (a.model_size.empty() || a.model_settings.empty()) return;  // a graph.txt profile's plan, or an older file
  defaults.take("--model", o.model, plan.model, "model", reprofile("--model", o.model));
  defaults.take("--size", o.size, a.model_size, "model size", reprofile("--size", o.size));
  if (!defaults.given("--set")) return defaults.take("--set", o.overrides, a.model_settings, "model settings", "");
  const std::string given = settings_text(make_model(o.model, o.overrides, parse_model_size(o.size)).settings);
  // every setting, as the plan lists them
  defaults.agree("--set", given, a.model_settings, "model settings", reprofile("--set", given));
}

// The optimizer state the plan counted (loom plan --optimizer sgd: none, plain SGD): --momentum defaults
// to 0 under a plan for plain SGD, and a momentum that keeps state the plan did not count (or none
// where it did) is an error, since the plan's memory assumes its own.
void take_plan_momentum(CLI::App& cmd, TrainOptions& o, const planner::Plan& plan) {
  const double counted = plan.assumptions.optimizer_state_factor;
  if (counted < 0) return;  // an older plan file does not say
  const OptimizerKind kind = parse_optimizer_kind(o.optimizer);
  if (kind == OptimizerKind::sgd && counted == 0 && cmd.count("--momentum") == 0) {
    o.momentum = 0;
    cmd.get_option("--momentum")->default_val(0);
  }
  const int kept = optimizer_state_tensors(kind, o.momentum);
  const std::string fix = kind == OptimizerKind::sgd
                              ? "give --momentum 0 (plain SGD, as the plan assumed), or make a plan for it (loom plan "
                                "--optimizer momentum)"
                              : replan("--optimizer", o.optimizer);
  LOOM_CHECK(kept == counted, "--optimizer ", o.optimizer, " with --momentum ", o.momentum, " keeps ", kept,
             " state tensor(s) per parameter, but ", o.plan, " counted ", counted, ": ", fix);
}

// --plan: its optimizer, precision and model are the run's defaults; --stages, --replicas,
// --microbatches, --chunks and --global-batch, when given, must be the plan's.
void take_plan_defaults(CLI::App& cmd, TrainOptions& o) {
  const planner::Plan plan = planner::read_plan(o.plan);
  const PlanDefaults defaults(cmd, o.plan);
  const planner::PlanAssumptions& a = plan.assumptions;
  defaults.take("--optimizer", o.optimizer, a.optimizer, "optimizer", replan("--optimizer", o.optimizer));
  defaults.take("--precision", o.precision, a.precision, "precision", replan("--precision", o.precision));
  take_plan_model(defaults, o, plan);
  take_plan_momentum(cmd, o, plan);
  std::string replicas = std::to_string(plan.stages.front().replicas());  // "2", or per stage "3,1"
  bool uneven = false;
  for (const planner::StagePlan& s : plan.stages) uneven = uneven || s.replicas() != plan.stages.front().replicas();
  for (std::size_t s = 1; uneven && s < plan.stages.size(); ++s) replicas += "," + std::to_string(plan.stages[s].replicas());
  struct Count {
    const char *flag, *what, *plan_flag;
    std::string given, planned;
  };
  const Count counts[] = {
      {"--stages", "stages", nullptr, std::to_string(o.stages), std::to_string(plan.stage_count())},
      {"--replicas", "replicas", nullptr, std::to_string(o.replicas), replicas},
      {"--microbatches", "micro-batches", "--microbatches", std::to_string(o.microbatches),
       std::to_string(plan.microbatches)},
      {"--chunks", "chunks", nullptr, std::to_string(o.chunks), std::to_string(plan.chunks)},
      {"--global-batch", "global batch", "--global-batch", std::to_string(o.global_batch),
       std::to_string(plan.global_batch)}};
  for (const Count& c : counts)
    if (defaults.given(c.flag)) defaults.agree(c.flag, c.given, c.planned, c.what, replan(c.plan_flag, c.given));
}

// Experiments only: loom's own transfers (stage boundaries, ring and hierarchical allreduce) wait
// as if they crossed links of these speeds (comm/link_shaper.h); 0 leaves that kind unshaped.
void enable_shaping(const comm::LinkShaping& shaping, const runtime::CommConfig& o) {
  if (shaping.intra_gbps <= 0 && shaping.inter_gbps <= 0) return;
  LOOM_CHECK(o.allreduce != comm::AllreduceAlgorithm::mpi, "--shape-intra-gbps/--shape-inter-gbps slow loom's own ",
             "transfers, and --allreduce mpi is MPI's: use --allreduce ring or hierarchical");
  comm::enable_link_shaping(comm::Topology::detect(o.ranks_per_node), shaping);
}
// Where and how a rank computes: device and backends, threads, optimizer, precision, allreduce.
void add_compute_options(CLI::App* cmd, TrainOptions& o) {
  cmd->add_option("--device", o.device,
                  "cpu, cuda (GPU local rank % GPUs of the node), cuda:N, sim or sim:N (a simulated device: CPU "
                  "kernels, device memory rules; for tests)")
      ->capture_default_str();
  cmd->add_option("--reduce-backend", o.reduce_backend,
                  "gradient allreduce with --device cuda: auto (NCCL where every replica of a stage has its own GPU, "
                  "else host-staged MPI), nccl or mpi")
      ->capture_default_str();
  cmd->add_option("--boundary-backend", o.boundary_backend,
                  "stage-boundary transfers with --device cuda: auto (NCCL send/receive where every rank of both "
                  "sides has its own GPU, else host-staged MPI), nccl or mpi")
      ->capture_default_str();
  cmd->add_option("--threads", o.threads, "CPU math threads per rank (default: LOOM_NUM_THREADS or cores / local ranks)");
  cmd->add_option("--optimizer", o.optimizer, optimizer_kind_list() + " (sgd uses --momentum; 0 for plain SGD)")
      ->capture_default_str();
  cmd->add_option("--lr", o.lr, "learning rate (default: 0.05 for sgd and momentum, 0.001 for adam and adamw)");
  cmd->add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay, "weight decay")->capture_default_str();
  cmd->add_option("--lr-schedule", o.lr_schedule, "constant, linear or cosine (decay after --warmup-steps)")
      ->capture_default_str();
  cmd->add_option("--warmup-steps", o.warmup_steps, "linear learning-rate warm-up steps")->capture_default_str();
  cmd->add_option("--clip-norm", o.clip_norm, "clip the global gradient norm to this value (0: off)")
      ->capture_default_str();
  cmd->add_option("--zero", o.zero,
                  "1: ZeRO-1, each replica of a stage keeps the optimizer state (and fp32 masters) of 1/R of the "
                  "stage's parameters; synchronous schedules; 0: off")
      ->capture_default_str();
  cmd->add_option("--precision", o.precision,
                  "fp32, bf16 or fp16: 16-bit compute (parameters, block outputs, boundary tensors and GEMM operands "
                  "rounded) with fp32 master weights, accumulation and optimizer; fp16 scales the loss dynamically")
      ->capture_default_str();
  cmd->add_option("--loss-scale", o.loss_scale, "fp16: the initial loss scale (halved on overflow)")->capture_default_str();
  cmd->add_option("--loss-scale-window", o.loss_scale_window,
                  "fp16: good steps in a row before the loss scale doubles")
      ->capture_default_str();
  cmd->add_flag("--recompute", o.recompute,
                "recompute every block's activations in backward instead of keeping them (a plan file's "
                "per-stage \"recompute\" chooses blocks)");
  cmd->add_option("--ranks-per-node", o.ranks_per_node, "pretend nodes of K ranks (or a list like 3,3,2)");
  cmd->add_option("--allreduce", o.allreduce, "gradient allreduce: mpi, ring or hierarchical")->capture_default_str();
  cmd->add_option("--bucket-mb", o.bucket_mb, "gradient bucket size in MB")->capture_default_str();
}

// --help in groups, a heading each: every flag of `loom train` is in one (a flag missing from the
// table stays under "Options", which apps_cli_errors would show).
void group_train_options(CLI::App* cmd) {
  const std::vector<std::pair<const char*, std::vector<const char*>>> groups = {
      {"Run (give --steps or --epochs)", {"--model", "--size", "--set", "--data", "--steps", "--epochs", "--global-batch", "--seed"}},
      {"Parallelism", {"--stages", "--replicas", "--plan", "--device", "--threads", "--ranks-per-node"}},
      {"Schedule", {"--schedule", "--schedule-file", "--microbatches", "--chunks", "--warmup", "--recompute"}},
      {"Optimizer", {"--optimizer", "--lr", "--momentum", "--weight-decay", "--lr-schedule", "--warmup-steps",
                     "--clip-norm", "--zero"}},
      {"Precision", {"--precision", "--loss-scale", "--loss-scale-window"}},
      {"Checkpoints", {"--checkpoint", "--checkpoint-every", "--keep-checkpoints", "--resume"}},
      {"Output", {"--log-every", "--metrics", "--trace", "--peak-gflops", "--quiet"}},
      {"Communication", {"--reduce-backend", "--boundary-backend", "--allreduce", "--bucket-mb"}},
      {"Experiments", {"--shape-intra-gbps", "--shape-inter-gbps", "--no-weight-stashing-experiment"}}};
  for (const auto& [group, flags] : groups)
    for (const char* flag : flags) cmd->get_option(flag)->group(group);
}

}  // namespace

void add_train_command(CLI::App& app) {
  static TrainOptions o;
  static std::string warmup;
  static comm::LinkShaping shaping;
  static bool no_weight_stashing = false;
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a model with pipeline and data parallelism (run under mpirun).\n--config FILE reads the options from a TOML file (keys at top level or in a [train] section), as written next to --metrics.");
  add_model_options(cmd, o.model, o.size, o.overrides);
  cmd->add_option("--data", o.data, "fashion-mnist, text:PATH or synthetic")->capture_default_str();
  cmd->add_option("--stages", o.stages, "pipeline stages S (N = S x R ranks)")->capture_default_str();
  cmd->add_option("--replicas", o.replicas, "replicas R of every stage")->capture_default_str();
  cmd->fallthrough();  // `loom train --config FILE`: the file's [train] section (main.cpp)
  cmd->add_option("--plan", o.plan, "plan JSON from `loom plan` (replaces --stages/--replicas/--microbatches/--schedule)");
  cmd->add_option("--schedule", o.schedule, schedule::schedule_kind_list(", ") + " (default dapple; not with --plan)");
  cmd->add_option("--schedule-file", o.schedule_file,
                  "run the schedule in this file: loom's text or PyTorch's CSV (`loom schedule export` writes both); "
                  "stages and chunks from the file, replicas = ranks / stages, M the file's");
  cmd->add_option("--microbatches", o.microbatches, "micro-batches M per global batch (not pipedream: whole minibatches)")
      ->capture_default_str();
  cmd->add_option("--chunks", o.chunks,
                  "model chunks per rank of interleaved, looped-bfs and interleaved-zb (the V-shaped zb-v, v-half "
                  "and v-min: 2)")
      ->capture_default_str();
  cmd->add_option("--warmup", warmup, "dapple/pipedream: warm-up forwards K (first stage) or K_0,...,K_{S-1}");
  cmd->add_option("--global-batch", o.global_batch, "samples per optimizer step")->capture_default_str();
  auto* steps = cmd->add_option("--steps", o.steps, "optimizer steps to run (this or --epochs is required)");
  auto* epochs = cmd->add_option("--epochs", o.epochs, "epochs to run (test accuracy after each, progress bar; this or --steps is required)");
  steps->excludes(epochs);
  cmd->add_option("--seed", o.seed, "seed of parameters, data order and dropout")->capture_default_str();
  add_compute_options(cmd, o);
  cmd->add_option("--log-every", o.log_every, "print every N steps")->capture_default_str();
  cmd->add_option("--metrics", o.metrics, "write JSON lines of per-step and per-epoch metrics (rank 0)");
  cmd->add_option("--peak-gflops", o.peak_gflops,
                  "the job's peak GFLOP/s for MFU (default 0: measured, an f32 GEMM on rank 0's host; none on GPUs)");
  cmd->add_option("--trace", o.trace, "write a Chrome trace (Perfetto) of every rank's actions");
  cmd->add_option("--checkpoint", o.checkpoint,
                  "directory of checkpoints, written at the end (DIR/step-N/: a safetensors file + JSON manifest per "
                  "stage; DIR/latest names the newest complete one)");
  cmd->add_option("--checkpoint-every", o.checkpoint_every, "also write a checkpoint every N steps (0: only at the end)")
      ->capture_default_str();
  cmd->add_option("--keep-checkpoints", o.keep_checkpoints, "complete checkpoints to keep in --checkpoint DIR")
      ->capture_default_str();
  cmd->add_option("--resume", o.resume,
                  "continue from the newest complete checkpoint in this directory, or from DIR/step-N (same model and "
                  "stage split)");
  cmd->add_flag("--quiet", o.quiet, "no progress output");
  cmd->add_option("--shape-intra-gbps", shaping.intra_gbps,
                  "experiments: loom's transfers between ranks of one node take bytes / this many GB/s (not --allreduce mpi)")
      ->check(CLI::Range(1e-6, 1e6));
  cmd->add_option("--shape-inter-gbps", shaping.inter_gbps,
                  "experiments: the same between nodes (with --ranks-per-node, one machine acts as several nodes)")
      ->check(CLI::Range(1e-6, 1e6));
  cmd->add_flag("--no-weight-stashing-experiment", no_weight_stashing,
                "EXPERIMENT ONLY (scripts/reproduce/weight_stashing.sh): pipedream/pipedream-2bw run every backward "
                "with the newest weights instead of its forward's stashed version; the gradients are wrong by design");
  group_train_options(cmd);
  cmd->callback([cmd] {
    for (const char* flag : {"--checkpoint", "--resume", "--metrics", "--trace", "--plan", "--data", "--model"})
      LOOM_CHECK(cmd->count(flag) == 0 || !cmd->get_option(flag)->as<std::string>().empty(), flag,
                 ": an empty path or name was given");
    if (!warmup.empty()) o.warmup = parse_int_list(warmup, "--warmup");
    if (!o.plan.empty()) take_plan_defaults(*cmd, o);
    if (!o.schedule_file.empty()) {  // the file sets what the flags do not (0); what they set must agree
      for (const auto& [flag, value] : {std::pair{"--microbatches", &o.microbatches}, {"--stages", &o.stages},
                                        {"--chunks", &o.chunks}})
        if (cmd->count(flag) == 0) *value = 0;
    }
    if (cmd->count("--lr") == 0) {  // the checkpoint's, else the optimizer's own default; also in the options file
      const std::optional<double> resumed = o.resume.empty() ? std::nullopt : runtime::checkpoint_learning_rate(o.resume);
      o.lr = resumed.value_or(default_learning_rate(parse_optimizer_kind(o.optimizer)));
      cmd->get_option("--lr")->default_val(o.lr);
    }
    runtime::ResolvedConfig run = runtime::resolve_config(o);  // every name parsed, before MPI starts
    LOOM_CHECK(cmd->count("--microbatches") == 0 || run.pipeline.schedule != schedule::ScheduleKind::pipedream,
               "--microbatches ", o.microbatches, " with --schedule pipedream: PipeDream runs whole minibatches, ",
               "one at a time (no micro-batches); drop --microbatches, or use --schedule pipedream-2bw");
    runtime::set_weight_stashing_off_for_experiment(no_weight_stashing);
    enable_shaping(shaping, run.comm);
    write_resolved_options(*cmd, o, run);
    train(o, std::move(run));
  });
}

}  // namespace loom::apps
