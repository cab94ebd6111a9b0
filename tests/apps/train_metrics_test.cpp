// `loom train --metrics`: every step's record carries the peak memory of each pipeline stage
// (`peak_bytes_by_stage`, the maximum over the stage's replicas) next to the peak of the fullest
// rank (`peak_bytes`). Under mpiexec -n 4, 2 stages x 2 replicas of an mlp, M = 4:
// - each stage's entry equals the maximum of its two ranks' own peaks (gathered here with plain
//   MPI, apart from loom's control collectives), category by category;
// - the maximum over the stages equals `peak_bytes`;
// - a hand-checkable property of the schedules: DAPPLE keeps K_0 = min(S, M) = 2 micro-batches
//   alive on stage 0 and K_1 = 1 on stage 1, so stage 0 holds more than 1.5x the activations of
//   stage 1 (2 kept + one transient against 1 kept); GPipe keeps all M = 4 on stage 1, more than
//   3x what DAPPLE keeps there.
// Each record's `step_seconds` (seconds per step) times `samples_per_s` is the global batch, and
// its `model_gflops_per_s` is the mlp's matrix multiplies counted by hand (2 x 61,056 weights per
// sample forward, x 3 for a training step; describe also counts bias adds and ReLUs, 1.6% more)
// times samples_per_s; `mfu` is that over --peak-gflops. A measured peak is positive and says how.
// Under --precision fp16 each record also carries the loss scale and whether the step was skipped.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <loom/comm/mpi_session.h>
#include <loom/core/memory.h>

#include "model_flops.h"
#include "peak_cache.h"
#include "training.h"

using namespace loom;

namespace {

constexpr int kStages = 2;
constexpr int kSteps = 3;
constexpr int kGlobalBatch = 64;

std::vector<std::string> entry_names() {
  std::vector<std::string> names;
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
    names.emplace_back(memory_category_name(static_cast<MemoryCategory>(c)));
  names.emplace_back("total");
  return names;
}

// This rank's stage and peaks after the run, on rank 0 for every rank (world order).
struct RankPeaks {
  int stage = 0;
  std::vector<std::int64_t> peaks;  // entry_names() order
};

std::vector<RankPeaks> gather_rank_peaks(int stage) {
  const MemoryStats stats = memory_stats();
  std::vector<std::int64_t> mine(stats.peak_by_category.begin(), stats.peak_by_category.end());
  mine.push_back(stats.peak_bytes);
  mine.push_back(stage);
  const int width = static_cast<int>(mine.size());
  std::vector<std::int64_t> all(static_cast<std::size_t>(width * comm::world_size()));
  MPI_Gather(mine.data(), width, MPI_INT64_T, all.data(), width, MPI_INT64_T, 0, MPI_COMM_WORLD);
  std::vector<RankPeaks> ranks;
  for (int r = 0; r < comm::world_size(); ++r) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(r * width);
    ranks.push_back({static_cast<int>(first[width - 1]), std::vector<std::int64_t>(first, first + width - 1)});
  }
  return ranks;
}

// Trains and returns, on rank 0, the metrics file's step records and every rank's own peaks.
std::pair<std::vector<nlohmann::json>, std::vector<RankPeaks>> run(const std::string& schedule,
                                                                 const std::string& precision = "fp32",
                                                                 double loss_scale = 65536.0) {
  apps::TrainOptions o;
  o.model = "mlp";
  o.overrides = "input=48,hidden=64,layers=16,classes=10";  // 8 blocks per stage: one output is small
  o.data = "synthetic";
  o.stages = kStages;
  o.replicas = 2;
  o.schedule = schedule;
  o.microbatches = 4;
  o.global_batch = kGlobalBatch;
  o.steps = kSteps;
  o.threads = 1;
  o.quiet = true;
  o.optimizer = "sgd";
  o.precision = precision;
  o.loss_scale = loss_scale;
  o.peak_gflops = 50;
  o.metrics = (std::filesystem::path(LOOM_BINARY_DIR) / "tests" / "apps" /
               ("train_metrics_" + schedule + "_" + precision + ".jsonl")).string();
  int stage = -1;
  apps::train(o, [&](const apps::TrainedStage& s) { stage = s.stage; });
  const std::vector<RankPeaks> ranks = gather_rank_peaks(stage);
  std::vector<nlohmann::json> steps;
  if (comm::world_rank() != 0) return {steps, ranks};
  std::ifstream in(o.metrics);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (record.contains("step")) steps.push_back(std::move(record));
  }
  return {steps, ranks};
}

std::int64_t activations(const nlohmann::json& record, int stage) {
  return record.at("peak_bytes_by_stage").at(stage).at("activations").get<std::int64_t>();
}

}  // namespace

TEST_CASE("loom train's metrics: peak memory per stage", "[train][memory][mpi]") {
  comm::ensure_mpi();
  REQUIRE(comm::world_size() == kStages * 2);
  std::map<std::string, nlohmann::json> last;
  for (const std::string schedule : {"dapple", "gpipe"}) {
    INFO("schedule " << schedule);
    const auto [steps, ranks] = run(schedule);
    if (comm::world_rank() != 0) continue;
    REQUIRE(steps.size() == kSteps);
    const std::vector<std::string> names = entry_names();
    for (const nlohmann::json& record : steps) {
      INFO("step " << record.at("step"));
      const nlohmann::json& by_stage = record.at("peak_bytes_by_stage");
      REQUIRE(by_stage.size() == kStages);
      for (const nlohmann::json& device : record.at("device_memory_by_stage")) {  // cpu: the host's MemAvailable
        CHECK(device.at("free_bytes").get<std::int64_t>() > 0);
        CHECK(device.at("free_bytes").get<std::int64_t>() <= device.at("total_bytes").get<std::int64_t>());
      }
      CHECK(record.at("device_memory_by_stage").size() == kStages);
      // Seconds per optimizer step over the same interval as samples_per_s: their product is the global batch.
      const double step_seconds = record.at("step_seconds").get<double>();
      CHECK(step_seconds > 0);
      CHECK(record.at("samples_per_s").get<double>() * step_seconds == Approx(kGlobalBatch).epsilon(1e-6));
      const double gflops = record.at("model_gflops_per_s").get<double>();
      CHECK(gflops / record.at("samples_per_s").get<double>() * 1e9 == Approx(3.0 * 2 * 61056).epsilon(0.02));
      CHECK(record.at("mfu").get<double>() == Approx(gflops / 50).epsilon(1e-12));
      for (const std::string& name : names) {
        INFO(name);
        std::int64_t most = 0;
        for (const nlohmann::json& stage : by_stage) most = std::max(most, stage.at(name).get<std::int64_t>());
        CHECK(most == record.at("peak_bytes").at(name).get<std::int64_t>());
      }
    }
    // The last record: each stage's entry is the larger of its two ranks' own peaks at the end.
    for (int s = 0; s < kStages; ++s)
      for (std::size_t e = 0; e < names.size(); ++e) {
        INFO("stage " << s << " " << names[e]);
        std::int64_t expected = -1;
        for (const RankPeaks& r : ranks)
          if (r.stage == s) expected = std::max(expected, r.peaks[e]);
        CHECK(steps.back().at("peak_bytes_by_stage").at(s).at(names[e]).get<std::int64_t>() == expected);
      }
    last[schedule] = steps.back();
  }
  if (comm::world_rank() != 0) return;
  const nlohmann::json& dapple = last.at("dapple");
  const nlohmann::json& gpipe = last.at("gpipe");
  CHECK(activations(dapple, 1) > 0);
  CHECK(static_cast<double>(activations(dapple, 0)) > 1.5 * static_cast<double>(activations(dapple, 1)));
  CHECK(static_cast<double>(activations(gpipe, 1)) > 3.0 * static_cast<double>(activations(dapple, 1)));
}

// fp16: every step record says the loss scale its backward used and whether it was skipped. From
// 2^40 every step of this run overflows: 2^40, 2^39, 2^38, all skipped. fp32 records have neither.
TEST_CASE("loom train's metrics: the fp16 loss scale and skipped steps", "[train][fp16][mpi]") {
  comm::ensure_mpi();
  const auto fp16 = run("dapple", "fp16", std::ldexp(1.0, 40)).first;
  const auto fp32 = run("dapple").first;
  if (comm::world_rank() != 0) return;
  REQUIRE(fp16.size() == kSteps);
  for (int k = 0; k < kSteps; ++k) {
    INFO("step " << k + 1);
    CHECK(fp16[k].at("loss_scale").get<double>() == std::ldexp(1.0, 40 - k));
    CHECK(fp16[k].at("skipped").get<bool>());
  }
  REQUIRE(fp32.size() == kSteps);
  CHECK_FALSE(fp32[0].contains("loss_scale"));
  CHECK_FALSE(fp32[0].contains("skipped"));
}

TEST_CASE("the GEMM peak is cached per machine, build, operand type and threads", "[train][mpi]") {
  comm::ensure_mpi();
  const std::string dir = std::string(LOOM_BINARY_DIR) + "/tests/apps/peak-cache-" + std::to_string(comm::world_rank());
  std::filesystem::remove_all(dir);
  const std::string path = dir + "/peak-gflops.json";
  const std::string f32 = apps::peak_cache_key(DType::f32, 2), bf16 = apps::peak_cache_key(DType::bf16, 2);
  CHECK(f32 != bf16);
  CHECK(f32 != apps::peak_cache_key(DType::f32, 1));
  CHECK_FALSE(apps::cached_peak(path, f32).has_value());  // no file: measure
  REQUIRE(apps::store_peak(path, f32, 123.5));
  REQUIRE(apps::store_peak(path, bf16, 250.0));
  CHECK(apps::cached_peak(path, f32) == 123.5);
  CHECK(apps::cached_peak(path, bf16) == 250.0);
  std::ofstream(path) << "{\"" << f32 << "\": {\"gflops\": ";  // damaged: measure again
  CHECK_FALSE(apps::cached_peak(path, f32).has_value());
  std::filesystem::remove_all(dir);
  // job_peak measures once, then reads the cache: the same rate, and the header names the file.
  ::setenv("LOOM_CACHE_DIR", dir.c_str(), 1);
  const apps::PeakRate first = apps::job_peak(0, true, 1), second = apps::job_peak(0, true, 1);
  ::unsetenv("LOOM_CACHE_DIR");
  CHECK(second.gflops == first.gflops);
  if (comm::world_rank() == 0) {
    CHECK_THAT(first.source, Catch::EndsWith(", now cached in " + path));
    CHECK_THAT(second.source, Catch::EndsWith(", cached in " + path));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a measured peak for MFU: rank 0's GEMM rate in the run's operand type, the same on every rank", "[train][mpi]") {
  comm::ensure_mpi();
  const apps::PeakRate peak = apps::job_peak(0, true, 1);
  CHECK(peak.gflops > 0);
  CHECK_THAT(peak.source, Catch::Contains("f32 GEMM 2048^3 measured with"));
  double everywhere[2] = {peak.gflops, -peak.gflops};
  MPI_Allreduce(MPI_IN_PLACE, everywhere, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK(everywhere[0] == -everywhere[1]);
  CHECK(apps::job_peak(7.5, true, 1).gflops == 7.5);
  // A bf16 run's peak is its own GEMMs' (oneDNN's bf16 kernels where the CPU has them).
  const apps::PeakRate bf16 = apps::job_peak(0, true, 1, DType::bf16);
  CHECK(bf16.gflops > 0);
  CHECK_THAT(bf16.source, Catch::StartsWith("bf16 GEMM 2048^3 measured with"));
  CHECK_THROWS_WITH(apps::job_peak(-1, true, 1), Catch::Contains("--peak-gflops must be >= 0"));
  CHECK(apps::flops_text(2e9, 10, apps::PeakRate{80, "x"}) == "20 GFLOP/s, 25% MFU");
  CHECK(apps::flops_text(2e9, 10, apps::PeakRate{}) == "20 GFLOP/s");
}
