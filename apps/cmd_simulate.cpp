// `loom simulate`: build (or read) a schedule, check it, predict its timeline from per-stage costs
// and print the program, the step time, the bubble fraction and the peak memory per stage; draw
// the timeline as SVG and write it as a Chrome trace. The planner scores plans with the same
// simulator, so what this prints is what "predicted" means.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/schedule_file.h>
#include <loom/schedule/simulator.h>
#include <loom/schedule/text.h>
#include <loom/schedule/trace.h>
#include <loom/schedule/validator.h>

#include "commands.h"
#include "schedule_sizes.h"

namespace loom::apps {

namespace {

struct SimulateFlags {
  schedule::ScheduleOptions schedule{"dapple", 4, 8, 2, 3, {}};
  std::string from;  // a schedule text file instead of a generator
  std::string schedule_file;  // a schedule file, loom's text or PyTorch's CSV: S, M and v from the file
  bool stages_given = false, microbatches_given = false, chunks_given = false, kind_given = false;
  bool activation_bytes_given = false;  // else the peak in bytes is not shown (it would be 0)
  std::vector<double> forward_ms{1.0}, backward_ms{2.0}, backward_input_ms, backward_weight_ms;
  std::vector<double> allreduce_ms{0.0}, step_ms{0.0};
  std::vector<double> activation_bytes{0.0}, boundary_bytes{0.0};
  std::vector<double> link_gb_per_s, link_latency_ms;
  std::string svg, trace;
  bool json = false, full = false;
};

// The largest time (ms) and byte count a per-stage flag takes: a stage of 10^7 ms is 2.8 hours.
constexpr double kMaxStageMs = 1e7, kMaxStageBytes = 1e15, kMaxLinkGbPerS = 1e6;

// A per-stage flag: one value for every stage or one per stage, finite, in [0, most].
double per_stage(const std::vector<double>& values, int stage, int stages, const char* flag, double fallback,
                 double most = kMaxStageMs) {
  if (values.empty()) return fallback;
  LOOM_CHECK(values.size() == 1 || static_cast<int>(values.size()) == stages, "--", flag, " has ", values.size(),
             " values; give one, or one per stage (", stages, ")");
  const double value = values.size() == 1 ? values[0] : values[stage];
  const bool unset = value == -1 && fallback == -1;  // BI/BW: -1 spells "half the backward"
  LOOM_CHECK(unset || (std::isfinite(value) && value >= 0 && value <= most), "--", flag,
             " must be a finite number in [0, ", most, "], got ", value);
  return value;
}

schedule::CostModel cost_model(const SimulateFlags& flags, int stages) {
  schedule::CostModel costs;
  for (int s = 0; s < stages; ++s) {
    schedule::StageCost c;
    c.forward_ms = per_stage(flags.forward_ms, s, stages, "forward-ms", 0);
    c.backward_ms = per_stage(flags.backward_ms, s, stages, "backward-ms", 0);
    c.backward_input_ms = per_stage(flags.backward_input_ms, s, stages, "backward-input-ms", -1);
    c.backward_weight_ms = per_stage(flags.backward_weight_ms, s, stages, "backward-weight-ms", -1);
    c.allreduce_ms = per_stage(flags.allreduce_ms, s, stages, "allreduce-ms", 0);
    c.step_ms = per_stage(flags.step_ms, s, stages, "step-ms", 0);
    c.activation_bytes = per_stage(flags.activation_bytes, s, stages, "activation-bytes", 0, kMaxStageBytes);
    c.boundary_bytes = per_stage(flags.boundary_bytes, s, stages, "boundary-bytes", 0, kMaxStageBytes);
    costs.stages.push_back(c);
  }
  if (!flags.link_gb_per_s.empty() || !flags.link_latency_ms.empty()) {
    for (int s = 0; s < stages; ++s) {
      schedule::Link link;
      const double gb_per_s = per_stage(flags.link_gb_per_s, s, stages, "link-gb-per-s", -1, kMaxLinkGbPerS);
      LOOM_CHECK(flags.link_gb_per_s.empty() || gb_per_s > 0,
                 "--link-gb-per-s must be positive (leave it out for free communication), got ", gb_per_s);
      if (gb_per_s > 0) link.bandwidth_bytes_per_s = gb_per_s * 1e9;
      link.latency_ms = per_stage(flags.link_latency_ms, s, stages, "link-latency-ms", 0);
      costs.links.push_back(link);
    }
  }
  return costs;
}

// --schedule with --schedule-file: the file must hold what that generator makes for the file's sizes.
schedule::Schedule load_schedule(const SimulateFlags& flags) {
  if (!flags.schedule_file.empty()) {  // S, M and v come from the file; flags given must agree with it
    schedule::ScheduleFileFlags given;
    if (flags.stages_given) given.stages = flags.schedule.stages;
    if (flags.chunks_given) given.chunks = flags.schedule.chunks;
    if (flags.microbatches_given) given.microbatches = flags.schedule.microbatches;
    if (flags.kind_given) given.kind = schedule::parse_schedule_kind(flags.schedule.kind, "--schedule");
    given.warmup = flags.schedule.warmup;
    return schedule::load_schedule_file(flags.schedule_file, given);
  }
  if (flags.from.empty()) {
    check_schedule_sizes(flags.schedule);
    return schedule::make_schedule(flags.schedule);
  }
  std::ifstream in(flags.from);
  LOOM_CHECK(static_cast<bool>(in), "cannot read schedule file '", flags.from, "'");
  std::ostringstream text;
  text << in.rdbuf();
  return schedule::parse_schedule(text.str(), flags.from);
}

std::string binary_bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", bytes, units[unit]);
  return text;
}

void print_report(const schedule::Schedule& sched, const schedule::SimulationResult& result, bool full, bool bytes) {
  std::printf("%s", schedule::to_text(sched, full ? schedule::TextStyle::Full : schedule::TextStyle::Compute).c_str());
  std::printf("\nS=%d stages, M=%d micro-batches%s\n", sched.stages, sched.microbatches,
              sched.chunks > 1 ? (", v=" + std::to_string(sched.chunks) + " chunks per stage").c_str() : "");
  std::printf("step time        %.4g ms\n", result.step_ms);
  std::printf("bubble fraction  %.4f (%.2f%%)\n", result.bubble_fraction, 100 * result.bubble_fraction);
  std::printf("%s %.4g ms\n", sched.asynchronous() ? "steady ms/mb    " : "step ms / M     ", result.ms_per_microbatch);
  std::printf("\n%5s %9s %9s %9s %14s %8s%s\n", "stage", "busy ms", "idle ms", "in-flight", "peak act (mb)", "versions",
              bytes ? "  peak act bytes" : "");
  for (int s = 0; s < sched.stages; ++s) {
    const schedule::StageStats& st = result.stages[s];
    std::printf("%5d %9.4g %9.4g %9d %14.4g %8d", s, st.busy_ms, st.idle_ms, st.peak_inflight, st.peak_activation_units,
                st.peak_weight_versions);
    std::printf(bytes ? "  %14s\n" : "\n", binary_bytes_text(st.peak_activation_bytes).c_str());
  }
}

nlohmann::json report_json(const schedule::Schedule& sched, const schedule::SimulationResult& result, bool bytes) {
  nlohmann::json stages = nlohmann::json::array();
  for (int s = 0; s < sched.stages; ++s) {
    const schedule::StageStats& st = result.stages[s];
    stages.push_back({{"stage", s},
                      {"program", schedule::program_text(sched, s, schedule::TextStyle::Compute)},
                      {"end_ms", st.end_ms},
                      {"busy_ms", st.busy_ms},
                      {"compute_ms", st.compute_ms},
                      {"idle_ms", st.idle_ms},
                      {"peak_inflight", st.peak_inflight},
                      {"peak_activation_microbatches", st.peak_activation_units},
                      {"peak_weight_versions", st.peak_weight_versions}});
    if (bytes) stages.back()["peak_activation_bytes"] = st.peak_activation_bytes;
  }
  return {{"schedule", sched.name},       {"stages", sched.stages},
          {"microbatches", sched.microbatches}, {"chunks", sched.chunks},
          {"step_ms", result.step_ms},    {"bubble_fraction", result.bubble_fraction},
          {"ms_per_microbatch", result.ms_per_microbatch}, {"per_stage", stages}};
}

void run(const SimulateFlags& flags) {
  const schedule::Schedule sched = load_schedule(flags);
  schedule::check(sched, flags.from.empty() ? flags.schedule_file : flags.from);
  const schedule::SimulationResult result = schedule::simulate(sched, cost_model(flags, sched.stages));
  if (flags.json)
    std::printf("%s\n", report_json(sched, result, flags.activation_bytes_given).dump(2).c_str());
  else
    print_report(sched, result, flags.full, flags.activation_bytes_given);
  if (!flags.svg.empty() || !flags.trace.empty()) {
    const schedule::Trace trace = schedule::simulation_trace(sched, result);
    if (!flags.trace.empty()) schedule::write_chrome_trace(trace, flags.trace);
    if (!flags.svg.empty()) {
      char title[160];
      std::snprintf(title, sizeof title, "%s: S=%d, M=%d%s, step %.4g ms, bubble %.1f%%", sched.name.c_str(),
                    sched.stages, sched.microbatches,
                    sched.chunks > 1 ? (", v=" + std::to_string(sched.chunks)).c_str() : "", result.step_ms,
                    100 * result.bubble_fraction);
      schedule::write_svg_timeline(trace, flags.svg, title);
    }
  }
}

}  // namespace

void add_schedule_size_options(CLI::App& cmd, schedule::ScheduleOptions& options) {
  cmd.add_option("--stages", options.stages, "Pipeline stages S")->capture_default_str();
  cmd.add_option("--microbatches", options.microbatches,
                 "Micro-batches M per step (pipedream: minibatches in the window; pipedream-2bw: per minibatch)")
      ->capture_default_str();
  cmd.add_option("--chunks", options.chunks, "Multi-chunk schedules: virtual stages per rank v")->capture_default_str();
  cmd.add_option("--minibatches", options.minibatches, "pipedream-2bw: minibatches in the window")
      ->capture_default_str();
  cmd.add_option("--warmup", options.warmup,
                 "dapple/pipedream: warm-up forwards, K of the first stage (K_s = K - s) or one per stage")
      ->delimiter(',');
}

void add_simulate_command(CLI::App& app) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Predict a pipeline schedule's timeline: prints the per-stage programs, step time, bubble fraction and peak "
      "activation memory per stage. Per-stage values take one number for all stages or a comma list, one per stage.");
  cmd->add_option("--schedule", flags->schedule.kind, "Schedule: " + schedule::schedule_kind_list("|"))->capture_default_str();
  add_schedule_size_options(*cmd, flags->schedule);
  CLI::Option* from = cmd->add_option("--from", flags->from, "Read the schedule from a text file (docs/schedules.md) instead");
  cmd->add_option("--schedule-file", flags->schedule_file,
                  "Read the schedule from a file, loom's text or PyTorch's CSV (told by content; docs/schedules.md "
                  "\"Schedule files\"): S, M and v come from it, and --stages, --microbatches, --chunks, --schedule "
                  "must agree if given")
      ->excludes(from);
  cmd->add_option("--forward-ms", flags->forward_ms, "Forward time per micro-batch, per stage")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--backward-ms", flags->backward_ms, "Backward time per micro-batch, per stage")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--backward-input-ms", flags->backward_input_ms, "BI time (default: backward / 2)")->delimiter(',');
  cmd->add_option("--backward-weight-ms", flags->backward_weight_ms, "BW time (default: backward / 2)")->delimiter(',');
  cmd->add_option("--allreduce-ms", flags->allreduce_ms, "Exposed gradient allreduce time, per stage")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--step-ms", flags->step_ms, "Optimizer step time, per stage")->delimiter(',')->capture_default_str();
  cmd->add_option("--activation-bytes", flags->activation_bytes,
                  "Activation bytes one micro-batch keeps alive on the stage (for peak memory in bytes)")
      ->delimiter(',');
  cmd->add_option("--boundary-bytes", flags->boundary_bytes, "Bytes of the stage's output activation per micro-batch")
      ->delimiter(',');
  cmd->add_option("--link-gb-per-s", flags->link_gb_per_s,
                  "Bandwidth of the link after each stage in GB/s (default: free communication)")
      ->delimiter(',');
  cmd->add_option("--link-latency-ms", flags->link_latency_ms, "Latency of the link after each stage")->delimiter(',');
  cmd->add_option("--svg", flags->svg, "Draw the timeline into this SVG file");
  cmd->add_option("--trace", flags->trace, "Write the timeline as Chrome trace JSON (open in Perfetto)");
  cmd->add_flag("--json", flags->json, "Print the results as JSON");
  cmd->add_flag("--full", flags->full, "Print the programs with their sends and receives");
  cmd->callback([flags, cmd] {
    flags->stages_given = cmd->count("--stages") > 0;
    flags->activation_bytes_given = cmd->count("--activation-bytes") > 0;
    flags->microbatches_given = cmd->count("--microbatches") > 0;
    flags->chunks_given = cmd->count("--chunks") > 0;
    flags->kind_given = cmd->count("--schedule") > 0;
    run(*flags);
  });
}

}  // namespace loom::apps
