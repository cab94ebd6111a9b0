// `loom plan --partition RANGES`: a given partition evaluated under a schedule kind instead of a
// search (planner/partition_evaluation.h): step time, bubble, each pipeline stage's chunks and
// memory per device, and whether it fits.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/planner/partition_evaluation.h>

namespace loom::apps {

struct PartitionOptions {
  std::string profile, cluster, optimizer = "adam";
  int zero = 0;  // 1: ZeRO-1 (planner::CostOptions::zero)
  int global_batch = 0;
  double profile_batch = 0;
  std::string partition;          // "0-3,4-7,...": the virtual stages' layers, in model order
  std::string schedule = "dapple";
  int chunks = 0;                 // 0: 2 for the multi-chunk kinds, else 1
  std::string replicas;           // "1,2,1": per pipeline stage; empty: 1 each
  std::string microbatches;       // one count
  bool json = false;
};

void run_partition(const PartitionOptions& o);

// A partition's evaluation as `loom plan --partition` shows it: a table, or JSON.
void print_partition(const planner::Partition& p, const planner::PartitionEvaluation& e);
nlohmann::json partition_json(const planner::Partition& p, const planner::PartitionEvaluation& e);

// "8,16,32" -> {8, 16, 32}; anything but positive integers is a loom::Error naming `flag`.
std::vector<int> positive_counts(const std::string& text, const char* flag);

}  // namespace loom::apps
