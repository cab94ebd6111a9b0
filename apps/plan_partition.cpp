// `loom plan --partition` (see plan_partition.h).
#include "plan_partition.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/core/bytes_text.h>
#include <loom/base/error.h>
#include <loom/layers/optimizer_kind.h>
#include <loom/planner/partition_evaluation.h>
#include <loom/planner/profile_json.h>
#include <loom/schedule/text.h>

namespace loom::apps {

namespace {

std::string chunk_layers(const planner::Partition& p, const schedule::Schedule& sched, int s) {
  std::string text;
  for (int c = 0; c < sched.chunks; ++c) {
    const auto [first, last] = p.layers[static_cast<std::size_t>(sched.virtual_stage(s, c))];
    text += (c ? " + " : "") + std::to_string(first) + "-" + std::to_string(last);
  }
  return text;
}

// The layers stage s recomputes, "-" for none.
std::string recomputed(const planner::Partition& p, int s) {
  if (p.recompute.empty() || p.recompute[static_cast<std::size_t>(s)].empty()) return "-";
  std::string text;
  for (int l : p.recompute[static_cast<std::size_t>(s)]) text += (text.empty() ? "" : ",") + std::to_string(l);
  return text;
}

}  // namespace

void print_partition(const planner::Partition& p, const planner::PartitionEvaluation& e) {
  std::printf("schedule %s, S=%d stages, v=%d chunks, M=%d micro-batches of %d samples\n",
              std::string(schedule::schedule_kind_name(p.kind)).c_str(), e.schedule.stages, e.schedule.chunks,
              p.microbatches, p.global_batch / p.microbatches);
  std::printf("predicted step %.3f ms (the one model), bubble %.4f\n\n", e.simulation.step_ms, e.simulation.bubble_fraction);
  std::printf("%-6s %-10s %-24s %10s %12s %12s %12s  %s\n", "stage", "devices", "layers (per chunk)", "busy ms",
              "weights+opt", "activations", "peak", "recomputed");
  for (int s = 0; s < e.schedule.stages; ++s) {
    const planner::StageEvaluation& st = e.stages[static_cast<std::size_t>(s)];
    std::string devices;
    for (int d : st.devices) devices += (devices.empty() ? "" : ",") + std::to_string(d);
    std::printf("%-6d %-10s %-24s %10.3f %12s %12s %12s  %s\n", s, devices.c_str(), chunk_layers(p, e.schedule, s).c_str(),
                e.simulation.stages[static_cast<std::size_t>(s)].busy_ms, bytes_text(st.static_bytes).c_str(),
                bytes_text(st.activation_bytes).c_str(), bytes_text(st.peak_bytes).c_str(), recomputed(p, s).c_str());
  }
  if (p.zero) std::printf("\nZeRO-1: each replica keeps 1/R of its stage's optimizer state\n");
  std::printf("\n%s\n", e.fits ? "fits in every device's memory" : ("does not fit: " + e.why_not).c_str());
}

nlohmann::json partition_json(const planner::Partition& p, const planner::PartitionEvaluation& e) {
  nlohmann::json stages = nlohmann::json::array();
  for (int s = 0; s < e.schedule.stages; ++s) {
    const planner::StageEvaluation& st = e.stages[static_cast<std::size_t>(s)];
    nlohmann::json chunks = nlohmann::json::array();
    for (int c = 0; c < e.schedule.chunks; ++c) {
      const auto [first, last] = p.layers[static_cast<std::size_t>(e.schedule.virtual_stage(s, c))];
      chunks.push_back({first, last});
    }
    stages.push_back({{"devices", st.devices}, {"chunks", chunks}, {"static_bytes", st.static_bytes},
                      {"activation_bytes", st.activation_bytes}, {"predicted_peak_bytes", st.peak_bytes},
                      {"busy_ms", e.simulation.stages[static_cast<std::size_t>(s)].busy_ms},
                      {"recompute", p.recompute.empty() ? std::vector<int>{} : p.recompute[static_cast<std::size_t>(s)]}});
  }
  return {{"schedule", schedule::schedule_kind_name(p.kind)}, {"stages", stages}, {"chunks", e.schedule.chunks},
          {"zero", p.zero ? 1 : 0},
          {"microbatches", p.microbatches}, {"predicted_step_ms", e.simulation.step_ms},
          {"bubble_fraction", e.simulation.bubble_fraction}, {"peak_memory_bytes", e.peak_bytes}, {"fits", e.fits},
          {"why_not", e.why_not}};
}

std::vector<int> positive_counts(const std::string& text, const char* flag) {
  std::vector<int> counts;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    LOOM_CHECK(used == item.size() && used > 0 && value >= 1, flag, ": '", schedule::excerpt(item),
               "' is not a positive integer");
    counts.push_back(value);
  }
  return counts;
}

void run_partition(const PartitionOptions& o) {
  const planner::Profile profile = planner::load_profile(o.profile, o.profile_batch);
  const planner::Cluster cluster = planner::parse_cluster(o.cluster);
  LOOM_CHECK(o.global_batch >= 1, "--global-batch must be at least 1");
  planner::Partition p;
  p.kind = schedule::parse_schedule_kind(o.schedule, "--schedule");
  p.chunks = o.chunks > 0 ? o.chunks : schedule::is_multi_chunk(p.kind) ? 2 : 1;
  p.global_batch = o.global_batch;
  const std::vector<int> m = positive_counts(o.microbatches.empty() ? "1" : o.microbatches, "--microbatches");
  LOOM_CHECK(m.size() == 1, "--microbatches: give one count with --partition, got '", o.microbatches, "'");
  p.microbatches = m.front();
  p.layers = planner::parse_layer_ranges(o.partition, "--partition");
  if (!o.replicas.empty()) p.replicas = positive_counts(o.replicas, "--replicas");
  planner::CostOptions options;
  options.optimizer_state_factor = optimizer_state_tensors(parse_optimizer_kind(o.optimizer));
  options.zero = o.zero == 1;
  options.step_ms_per_mb = profile.step_ms_per_mb_of(o.optimizer);
  const planner::PartitionEvaluation e = planner::evaluate_partition(profile, cluster, p, options);
  if (o.json)
    std::cout << partition_json(p, e).dump(2) << "\n";
  else
    print_partition(p, e);
}

}  // namespace loom::apps
