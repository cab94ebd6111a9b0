// `loom plan`: run the planners on a profile and a cluster, print their plans side by side (or
// as JSON), and write the best one as a plan file for `loom train --plan`.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <tuple>

#include <unistd.h>

#include <loom/core/bytes_text.h>
#include <loom/base/error.h>
#include <loom/layers/optimizer_kind.h>
#include <loom/planner/baselines.h>
#include <loom/planner/dapple_planner.h>
#include <loom/planner/joint_planner.h>
#include <loom/planner/pipedream_planner.h>
#include <loom/planner/plan_file.h>
#include <loom/planner/plan_score.h>
#include <loom/planner/profile_json.h>
#include <loom/schedule/text.h>

#include <loom/runtime/precision.h>

#include "commands.h"
#include "plan_explain.h"
#include "plan_partition.h"
#include "version.h"

namespace loom::apps {

namespace {

// What to change when no plan fits, the last words of that error.
constexpr const char* kNoPlanFix =
    " (give the devices more memory with --cluster ...:mem=, more devices, a smaller --global-batch, or "
    "--optimizer sgd, whose state is smallest)";

struct PlanOptions {
  std::string profile, cluster, planner = "all", out, optimizer = "adam", microbatches, precision;
  int global_batch = 0;
  int simulate_candidates = 50;
  double profile_batch = 0;
  double time_limit_s = 60;
  int zero = 0;  // 1: ZeRO-1 in the joint search's memory model and in the plan file
  bool json = false, overlap = false, explain = false;
};

using Row = planner::PlannerResult;

// A row as JSON: every number from the one model (plan_score.h) but objective_ms, the planner's own
// search objective (the closed form of cost_model.h; null for the joint search).
nlohmann::json row_json(const Row& row, double single_device_ms) {
  const planner::Plan& plan = row.plan;
  nlohmann::json stages = nlohmann::json::array();
  for (const planner::StagePlan& s : plan.stages)
    stages.push_back({{"layers", s.later_chunks.empty() ? nlohmann::json{s.first_layer, s.last_layer}
                                                         : nlohmann::json(s.chunk_layers())},
                      {"replicas", s.replicas()},
                      {"devices", s.devices},
                      {"recompute", s.recompute},
                      {"predicted_peak_bytes", s.predicted_peak_bytes}});
  const bool any = !plan.stages.empty();
  const auto number = [any](double x) { return any ? nlohmann::json(x) : nlohmann::json(); };
  nlohmann::json out = {{"planner", plan.planner},
                        {"feasible", row.found},
                        {"strategy", plan.strategy()},
                        {"stages", stages},
                        {"microbatches", number(plan.microbatches)},
                        {"schedule", schedule::schedule_kind_name(plan.schedule)},
                        {"chunks", plan.chunks},
                        {"zero", plan.zero},
                        {"placement", plan.placement},
                        {"overlap_allreduce", plan.overlap_allreduce},
                        {"predicted_step_ms", number(plan.predicted_step_ms)},
                        {"bubble_fraction", number(row.score.simulation.bubble_fraction)},
                        {"speedup", number(single_device_ms / plan.predicted_step_ms)},
                        {"peak_memory_bytes", number(plan.peak_memory_bytes)},
                        {"objective_ms", row.objective_ms >= 0 ? nlohmann::json(row.objective_ms) : nlohmann::json()},
                        {"planning_ms", row.planning_ms}};
  out["search"] = row.search;
  out["lower_bound_ms"] = row.lower_bound_ms >= 0 ? nlohmann::json(row.lower_bound_ms) : nlohmann::json();
  out["coarsened"] = row.coarsened_from > 0
                         ? nlohmann::json{{"from_layers", row.coarsened_from}, {"to_groups", row.coarsened_to}}
                         : nlohmann::json();
  if (!row.note.empty()) out["note"] = row.note;
  return out;
}

std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, ms < 100 ? "%.3f" : "%.1f", ms);
  return text;
}

// What else the joint search chose: "  schedule zb-v, ZeRO-1, 3 blocks recomputed".
std::string joint_choices(const planner::Plan& plan) {
  int recomputed = 0;
  for (const planner::StagePlan& s : plan.stages) recomputed += static_cast<int>(s.recompute.size());
  std::string text = "  schedule " + std::string(schedule::schedule_kind_name(plan.schedule));
  if (plan.zero == 1) text += ", ZeRO-1";
  if (recomputed > 0) text += ", " + std::to_string(recomputed) + " block(s) recomputed";
  return text;
}

void print_table(const std::vector<Row>& rows, const planner::Profile& profile, const planner::Cluster& cluster,
                 int global_batch, double single_device_ms) {
  std::printf("profile  %s: %d layers, profiled at micro-batch %g (%s)\n", profile.model.c_str(), profile.size(),
              profile.microbatch, profile.source.c_str());
  std::printf("cluster  %s: %s\n", cluster.name.c_str(), planner::describe(cluster).c_str());
  std::printf("batch    %d samples per step; one device: %s ms per step\n\n", global_batch,
              ms_text(single_device_ms).c_str());
  std::printf("%-11s %5s %11s %8s %7s %10s %9s  %s\n", "planner", "M", "step ms", "speedup", "bubble", "peak mem",
              "plan ms", "strategy (layers x replicas per stage)");
  for (const Row& r : rows) {
    if (r.plan.stages.empty()) {
      std::printf("%-11s %5s %11s %8s %7s %10s %9.1f  (%s)\n", "?", "-", "-", "-", "-", "-", r.planning_ms,
                  r.note.c_str());
      continue;
    }
    std::printf("%-11s %5d %11s %7.2fx %6.1f%% %10s %9.1f  %s%s%s\n", r.plan.planner.c_str(), r.plan.microbatches,
                ms_text(r.plan.predicted_step_ms).c_str(), single_device_ms / r.plan.predicted_step_ms,
                100 * r.score.simulation.bubble_fraction, bytes_text(r.plan.peak_memory_bytes).c_str(), r.planning_ms,
                r.plan.strategy().c_str(), r.plan.planner == "joint" ? joint_choices(r.plan).c_str() : "",
                r.found ? "" : "  (does not fit in memory)");
  }
  std::printf("\nstep ms, bubble and peak mem (per device): the one model, the schedule simulated per chunk\n");
  for (const Row& r : rows) {  // what was not an exact search of the whole chain
    if (r.coarsened_from > 0)
      std::printf("\n%s: coarsened: planned on %d groups of adjacent layers (of %d layers)", r.plan.planner.c_str(),
                  r.coarsened_to, r.coarsened_from);
    if (r.search != "exact")
      std::printf("\n%s: %s: the search was stopped; this is the best plan it had found", r.plan.planner.c_str(),
                  r.search.c_str());
    if (r.search != "exact" && r.lower_bound_ms > 0 && r.found)
      std::printf(", within %.1f%% of the best of its space (none is faster than %s ms)",
                  100 * (r.plan.predicted_step_ms / r.lower_bound_ms - 1), ms_text(r.lower_bound_ms).c_str());
  }
  std::printf("\n");
}

// Progress on a terminal only: one line on stderr, rewritten in place, cleared at the end.
class Progress {
 public:
  Progress() : on_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() { clear(); }
  void show(const std::string& what) {
    if (!on_) return;
    std::fprintf(stderr, "\r\033[K%s", what.substr(0, 100).c_str());
    std::fflush(stderr);
  }
  void clear() {
    if (on_) std::fprintf(stderr, "\r\033[K");
  }
  bool on() const { return on_; }

 private:
  bool on_;
};

// `plan` written to --out with what its predictions assumed (PlanAssumptions).
void write_plan_file(planner::Plan plan, const PlanOptions& o, const planner::Profile& profile,
                     const planner::Cluster& cluster) {
  planner::PlanAssumptions& a = plan.assumptions;
  a.optimizer = o.optimizer;
  a.optimizer_state_factor = optimizer_state_tensors(parse_optimizer_kind(o.optimizer));
  a.precision = o.precision;
  a.model_size = profile.model_size;
  a.model_settings = profile.model_settings;
  a.cluster = o.cluster;
  a.device_memory_bytes = cluster.device_memory;
  a.profile = o.profile;
  a.profile_fingerprint = profile.fingerprint;
  a.loom_version = version_text();
  planner::write_plan(plan, cluster, o.out);
}

// The joint search's plan as the plan file holds it, with --zero's ZeRO-1 (or the search's).
planner::Plan joint_plan(const planner::JointResult& r, const std::string& model, int zero) {
  planner::Plan plan = planner::partition_plan(r.partition, r.evaluation, model, "joint");
  plan.zero = std::max(plan.zero, zero);
  plan.lower_bound_ms = r.lower_bound_ms;
  return plan;
}

planner::JointOptions joint_options(const planner::PlannerOptions& options) {
  planner::JointOptions joint;
  joint.cost = options.cost;
  joint.microbatch_counts = options.microbatch_counts;
  joint.time_limit_s = options.time_limit_s;
  return joint;
}

// plan_joint, and how long it took in `ms`.
planner::JointResult timed_joint(const planner::Profile& profile, const planner::Cluster& cluster, int global_batch,
                                 const planner::JointOptions& joint, double& ms) {
  const auto start = std::chrono::steady_clock::now();
  planner::JointResult r = planner::plan_joint(profile, cluster, global_batch, joint);
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// The joint search as a row of `--planner all`, seeded with the other rows' plans and given at
// most kJointShareS of --time-limit (the planning budget of issue 29; `--planner joint` gets all).
constexpr double kJointShareS = 10;
Row joint_row(const std::vector<Row>& rows, const PlanOptions& o, const planner::Profile& profile,
              const planner::Cluster& cluster, const planner::PlannerOptions& options) {
  planner::JointOptions joint = joint_options(options);
  joint.time_limit_s = options.time_limit_s > 0 ? std::min(options.time_limit_s, kJointShareS) : 0.0;
  for (const Row& row : rows)
    if (row.found) joint.seed_plans.emplace_back(row.plan.planner, row.plan);
  Row row;
  const planner::JointResult r = timed_joint(profile, cluster, o.global_batch, joint, row.planning_ms);
  row.search = r.search;
  row.lower_bound_ms = r.lower_bound_ms;
  row.found = r.found;
  row.plan.planner = "joint";
  if (!r.found) {
    row.note = "joint: " + r.why_none;
    return row;
  }
  row.plan = joint_plan(r, profile.model, o.zero);
  row.score = r.evaluation;
  if (!r.seeded_from.empty()) row.note = "no candidate of the search beat the " + r.seeded_from + " plan";
  return row;
}

// `--planner joint`: partition, replicas, schedule kind and M searched together (joint_planner.h).
void run_joint(const PlanOptions& o, const planner::Profile& profile, const planner::Cluster& cluster,
               const planner::PlannerOptions& options) {
  const planner::JointOptions joint = joint_options(options);
  double ms = 0;
  const planner::JointResult r = timed_joint(profile, cluster, o.global_batch, joint, ms);
  if (o.json) {
    nlohmann::json out = r.found ? partition_json(r.partition, r.evaluation) : nlohmann::json::object();
    out.update({{"planner", "joint"}, {"found", r.found}, {"search", r.search},
                {"lower_bound_ms", std::isfinite(r.lower_bound_ms) ? nlohmann::json(r.lower_bound_ms) : nlohmann::json()},
                {"evaluated", r.evaluated},
                {"nodes", r.nodes}, {"planning_ms", ms}});
    if (!r.seeded_from.empty()) out["seeded_from"] = r.seeded_from;
    if (o.explain) out["explain"] = explain_kinds(profile, cluster, o.global_batch, joint, r.evaluation.simulation.step_ms);
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("joint: %s search, %ld candidates simulated, %ld partial ones visited, in %.1f ms\n",
                r.search.c_str(), r.evaluated, r.nodes, ms);
    if (r.search != "exact" && r.found)
      std::printf("stopped within %.1f%% of the best plan of its space: none is faster than %s ms\n",
                  100 * (r.evaluation.simulation.step_ms / r.lower_bound_ms - 1), ms_text(r.lower_bound_ms).c_str());
    std::printf("\n");
    if (r.found) print_partition(r.partition, r.evaluation);
    else std::printf("no plan fits in device memory (%s)\n", r.why_none.c_str());
    if (!r.seeded_from.empty())
      std::printf("(the %s planner's plan: no candidate of the search was faster)\n", r.seeded_from.c_str());
    if (o.explain)
      print_explanation(explain_kinds(profile, cluster, o.global_batch, joint,
                                      r.found ? r.evaluation.simulation.step_ms : 0.0));
  }
  if (o.out.empty()) return;
  if (!r.found) LOOM_THROW("no plan fits in device memory; nothing written to ", o.out, kNoPlanFix);
  write_plan_file(joint_plan(r, profile.model, o.zero), o, profile, cluster);
  if (!o.json) std::printf("\nwrote the joint plan to %s\n", o.out.c_str());
}

// --precision, given or the profile's (else fp32): the profile's times are for its own precision.
std::string plan_precision(const std::string& given, const planner::Profile& profile) {
  if (given.empty()) return profile.precision.empty() ? "fp32" : profile.precision;
  runtime::parse_precision(given);
  LOOM_CHECK(profile.precision.empty() || profile.precision == given, "--precision ", given, " and ", profile.source,
             "'s precision ", profile.precision, " disagree: its times are for ", profile.precision,
             "; drop --precision, or profile at ", given, " (loom profile --precision ", given, ")");
  return given;
}

void run(PlanOptions o) {
  // 0: from the file name; anything else must be a size a profile may have.
  if (o.profile_batch != 0 && !(o.profile_batch >= planner::kMinProfileMicrobatch &&
                                o.profile_batch <= planner::kMaxProfileMicrobatch))
    LOOM_THROW("--profile-batch must be in [", planner::kMinProfileMicrobatch, ", ", planner::kMaxProfileMicrobatch,
               "] (or 0: from the file name), got ", o.profile_batch);
  const planner::Profile profile = planner::load_profile(o.profile, o.profile_batch);
  const planner::Cluster cluster = planner::parse_cluster(o.cluster);
  if (o.global_batch < 1) LOOM_THROW("--global-batch must be at least 1");
  o.precision = plan_precision(o.precision, profile);  // the plan file records it
  planner::PlannerOptions options;
  options.cost.optimizer_state_factor = optimizer_state_tensors(parse_optimizer_kind(o.optimizer));
  options.cost.zero = o.zero == 1;
  options.cost.step_ms_per_mb = profile.step_ms_per_mb_of(o.optimizer);
  options.cost.overlap_allreduce = o.overlap;
  if (!o.microbatches.empty()) options.microbatch_counts = positive_counts(o.microbatches, "--microbatches");
  if (o.simulate_candidates < 0 || o.simulate_candidates > 1000)
    LOOM_THROW("--simulate-candidates must be in [0, 1000], got ", o.simulate_candidates);
  options.simulate_candidates = o.simulate_candidates;
  if (!(std::isfinite(o.time_limit_s) && o.time_limit_s >= 0 && o.time_limit_s <= 86400))
    LOOM_THROW("--time-limit must be in [0, 86400] seconds (0: no limit), got ", o.time_limit_s);
  options.time_limit_s = o.time_limit_s;
  Progress progress;
  if (progress.on()) options.progress = [&progress](const std::string& what) { progress.show(what); };

  if (o.explain && o.planner != "joint") LOOM_THROW("--explain belongs to --planner joint");
  if (o.planner == "joint") return run_joint(o, profile, cluster, options);
  std::vector<Row> rows;
  const bool all = o.planner == "all" || o.planner == "papers";
  if (all || o.planner == "dapple") rows.push_back(planner::plan_dapple(profile, cluster, o.global_batch, options));
  if (all || o.planner == "pipedream") rows.push_back(planner::plan_pipedream(profile, cluster, o.global_batch, options));
  if (all || o.planner == "dp") {
    rows.push_back(planner::plan_data_parallel(profile, cluster, o.global_batch, false, options));
    rows.push_back(planner::plan_data_parallel(profile, cluster, o.global_batch, true, options));
  }
  if (all || o.planner == "gpipe") rows.push_back(planner::plan_gpipe(profile, cluster, o.global_batch, options));
  if (o.planner == "all") rows.push_back(joint_row(rows, o, profile, cluster, options));

  // The fastest that fits, all rows scored by the one model; on a tie the earlier row.
  const Row* best = nullptr;
  for (const Row& row : rows)
    if (row.found && (!best || row.plan.predicted_step_ms < best->plan.predicted_step_ms)) best = &row;
  progress.clear();
  const double single = planner::single_device_step_ms(profile, cluster, o.global_batch, options.cost);
  if (o.json) {
    nlohmann::json planners = nlohmann::json::array();
    for (const Row& row : rows) planners.push_back(row_json(row, single));
    nlohmann::json out = {{"model", profile.model},
                          {"profile", o.profile},
                          {"cluster", cluster.name},
                          {"global_batch", o.global_batch},
                          {"single_device_step_ms", single},
                          {"planners", planners},
                          {"best", best ? nlohmann::json(best->plan.planner) : nlohmann::json()}};
    std::cout << out.dump(2) << "\n";
  } else {
    print_table(rows, profile, cluster, o.global_batch, single);
  }
  if (!o.out.empty()) {
    if (!best) LOOM_THROW("no plan fits in device memory; nothing written to ", o.out, kNoPlanFix);
    planner::Plan plan = best->plan;
    plan.zero = std::max(plan.zero, o.zero);  // scored with --zero's ZeRO-1 (CostOptions::zero)
    write_plan_file(plan, o, profile, cluster);
    if (!o.json) std::printf("\nwrote the %s plan to %s\n", best->plan.planner.c_str(), o.out.c_str());
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  static PlanOptions o;
  CLI::App* cmd = app.add_subcommand("plan", "Plan stages, replicas and micro-batches for a profile on a cluster");
  cmd->add_option("--profile", o.profile, "profile: loom profile JSON or a PipeDream/DAPPLE graph.txt")->required();
  cmd->add_option("--cluster", o.cluster,
                  "cluster: preset A, B or C, a spec like 2x8:intra=130GB/s,inter=25Gb/s,mem=16GB, or a JSON file")
      ->required();
  cmd->add_option("--global-batch", o.global_batch, "samples per optimizer step")->required();
  cmd->add_option("--planner", o.planner,
                  "dapple, pipedream, dp (with and without overlap), gpipe, joint (partition, replicas, every "
                  "synchronous schedule kind, recomputation and M searched together, scored by the simulator), or "
                  "all of these (--out: the fastest that fits), or papers (all but joint: the papers' planners)")
      ->check(CLI::IsMember({"dapple", "pipedream", "dp", "gpipe", "all", "papers", "joint"}))
      ->capture_default_str();
  cmd->add_option("--out", o.out,
                  "write the plan that fits and simulates fastest as a plan file for `loom train --plan`");
  cmd->add_flag("--json", o.json, "print JSON instead of a table");
  cmd->add_flag("--explain", o.explain,
                "with --planner joint: for each schedule kind, its best plan or why none fits (which stage, by how "
                "many bytes), with predicted time and per-stage memory");
  cmd->add_flag("--overlap", o.overlap,
                "dapple/pipedream/gpipe: allreduce in 25 MiB gradient buckets during the last backward (as "
                "loom's executor does) instead of after it (DAPPLE's model); dp shows both anyway");
  cmd->add_option("--profile-batch", o.profile_batch,
                  "graph.txt only: the micro-batch it was profiled at (default: -pbs-N in the file name, else 1)");
  cmd->add_option("--optimizer", o.optimizer, optimizer_kind_list() +
                      ": the state it keeps per parameter (adam/adamw 2x, momentum 1x, sgd none: plain SGD, "
                      "which loom train --plan then runs with --momentum 0)")
      ->capture_default_str();
  cmd->add_option("--precision", o.precision,
                  "fp32, bf16 or fp16: the precision the plan is for, recorded in the plan file (loom train --plan "
                  "runs it and refuses another); default and only choice where the profile records one: the profile's "
                  "(its times are for it), else fp32");
  cmd->add_option("--zero", o.zero,
                  "1: plan for ZeRO-1 (each replica keeps 1/R of its stage's optimizer state; counted by the joint "
                  "search and --partition) and write zero 1 into the plan file")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  cmd->add_option("--microbatches", o.microbatches, "only these micro-batch counts, e.g. 8,16,32 (default: divisors)");
  cmd->add_option("--simulate-candidates", o.simulate_candidates,
                  "DAPPLE: score this many of its best candidates (by its closed form) with the one model and keep "
                  "the fastest that fits (0: the closed form's optimum)")
      ->capture_default_str();
  cmd->add_option("--time-limit", o.time_limit_s,
                  "DAPPLE and joint: stop the exact search after this many seconds and return the best plan found "
                  "so far, marked time-limited (0: no limit); joint inside all gets at most 10 s of it")
      ->capture_default_str();
  static PartitionOptions given;
  CLI::Option* partition =
      cmd->add_option("--partition", given.partition,
                      "evaluate this partition instead of searching: each virtual stage's layers in model order, "
                      "e.g. 0-5,6-11,12-17,18-23 (S*v ranges; with --schedule, --chunks, --replicas, one "
                      "--microbatches): simulated step, bubble and each stage's memory per device");
  cmd->add_option("--schedule", given.schedule, "with --partition: the schedule kind (any synchronous one)")
      ->needs(partition)
      ->capture_default_str();
  cmd->add_option("--chunks", given.chunks, "with --partition: chunks per stage v (default 2 for multi-chunk kinds)")
      ->needs(partition);
  cmd->add_option("--replicas", given.replicas, "with --partition: replicas per pipeline stage, e.g. 1,2,1 (default 1)")
      ->needs(partition);
  cmd->callback([] {
    if (given.partition.empty()) return run(o);
    LOOM_CHECK(o.out.empty() && o.planner == "all", "--partition evaluates a given partition: --out and --planner "
                                                   "belong to the search");
    given.profile = o.profile;
    given.cluster = o.cluster;
    given.global_batch = o.global_batch;
    given.profile_batch = o.profile_batch;
    given.optimizer = o.optimizer;
    given.zero = o.zero;
    given.microbatches = o.microbatches;
    given.json = o.json;
    run_partition(given);
  });
}

}  // namespace loom::apps
