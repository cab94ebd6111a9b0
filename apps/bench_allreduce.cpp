// `loom bench allreduce`: time every allreduce algorithm over the world, nccl-tests style, on MPI
// (host memory) or NCCL (--backend nccl: each rank's GPU).
//
// Run under mpirun. For each size (min..max bytes, times --factor): warm-up, then short rounds in
// which the algorithms take turns; a round's time is the slowest rank's mean per call and an
// algorithm's time is its median round (robust on a shared, oversubscribed machine). algbw = bytes / time and
// busbw = algbw * 2(n-1)/n (what each rank's link carries, comparable across rank counts).
// --ranks-per-node pretends the machine is several nodes (the hierarchical algorithm's layout);
// --shape-intra-gbps / --shape-inter-gbps slow loom's own point-to-point traffic down to given
// link speeds and add the link model's prediction (allreduce_cost.h) next to the measurement.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <loom/comm/allreduce.h>
#include <loom/comm/allreduce_cost.h>
#include <loom/comm/link_shaper.h>
#include <loom/comm/mpi_communicator.h>
#include <loom/comm/mpi_session.h>
#include <loom/comm/topology.h>
#include <loom/core/device.h>
#include <loom/core/memory.h>
#include <loom/core/timer.h>

#include "commands.h"

namespace loom::apps {

namespace {

struct AllreduceBenchOptions {
  bool json = false;
  std::string backend = "mpi";  // mpi: host memory; nccl: each rank's GPU (local rank % GPUs)
  std::vector<std::string> algorithms{"mpi", "ring", "hierarchical"};
  std::int64_t min_bytes = 4 << 10;
  std::int64_t max_bytes = 256 << 20;
  int factor = 4;
  std::string ranks_per_node;
  int iterations = 0;  // calls per round; 0: about round_ms worth
  double round_ms = 20;
  double seconds = 3;  // per size, all algorithms together
  int rounds = 0;      // 0: as many as fit in `seconds` (at least 7)
  int warmup = 2;
  std::int64_t segment_kb = 0;
  double shape_intra_gbps = 0;
  double shape_inter_gbps = 0;
};

// Seconds per call, the slowest rank's mean over `iterations` calls.
double time_calls(const std::function<void()>& call, int iterations) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < iterations; ++i) call();
  double mine = (MPI_Wtime() - start) / iterations, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

void run(const AllreduceBenchOptions& options) {
  comm::ensure_mpi();  // errors below then name the rank
  LOOM_CHECK(options.min_bytes >= 4 && options.min_bytes <= options.max_bytes, "--min-bytes ", options.min_bytes,
             " and --max-bytes ", options.max_bytes, " make no range");
  LOOM_CHECK(options.factor >= 2, "--factor must be at least 2");
  // CLI11's ranges let nan through (it compares false both ways).
  for (double value : {options.round_ms, options.seconds, options.shape_intra_gbps, options.shape_inter_gbps})
    LOOM_CHECK(std::isfinite(value), "--round-ms, --seconds and --shape-*-gbps must be finite numbers");
  std::vector<comm::AllreduceAlgorithm> algorithms;
  for (const std::string& name : options.algorithms) algorithms.push_back(comm::parse_algorithm(name));

  const comm::Topology topology = comm::Topology::detect(options.ranks_per_node);
  const comm::Backend backend = comm::parse_backend(options.backend);
  Device device = Device::cpu();
  if (backend == comm::Backend::nccl) {
    LOOM_CHECK(cuda_device_count() > 0, "--backend nccl: no CUDA device is visible",
               cuda_compiled() ? "" : " (this build of loom has no CUDA backend)");
    device = Device::cuda(comm::Topology::physical().local_rank(comm::world_rank()) % cuda_device_count());
    LOOM_CHECK(options.shape_intra_gbps == 0 && options.shape_inter_gbps == 0,
               "--shape-*-gbps shape loom's MPI transfers, not NCCL's");
  }
  auto members = comm::make_communicator(backend, MPI_COMM_WORLD, device);
  if (options.segment_kb > 0 && backend == comm::Backend::mpi) {
    auto& mpi = dynamic_cast<comm::MpiCommunicator&>(*members);
    comm::RingOptions ring = mpi.ring_options();
    ring.segment_bytes = options.segment_kb * 1024;
    mpi.set_ring_options(ring);
  }
  comm::ReduceGroup group(std::move(members), topology);
  const bool shaped = options.shape_intra_gbps > 0 || options.shape_inter_gbps > 0;
  if (shaped) {
    LOOM_CHECK(options.shape_intra_gbps > 0 && options.shape_inter_gbps > 0,
               "--shape-intra-gbps and --shape-inter-gbps go together");
    comm::enable_link_shaping(topology, {options.shape_intra_gbps, options.shape_inter_gbps});
  }
  const int ranks = group.size();
  const bool root = comm::world_rank() == 0;
  const bool even_nodes = std::all_of(group.node_sizes().begin(), group.node_sizes().end(),
                                      [&](int size) { return size == group.node_sizes().front(); });
  if (root && !options.json) {
    std::printf("# loom bench allreduce: %s; reduce group %s; %s on %s\n", topology.describe().c_str(),
                group.describe().c_str(), options.backend.c_str(), device.str().c_str());
    if (shaped)
      std::printf("# links shaped to %.3g GB/s intra-node, %.3g GB/s inter-node (MPI's own allreduce is not shaped)\n",
                  options.shape_intra_gbps, options.shape_inter_gbps);
    std::printf("%-13s %12s %6s %12s %11s %11s%s\n", "algorithm", "bytes", "ranks", "time_us", "algbw_GB/s", "busbw_GB/s",
                shaped ? "    model_us" : "");
  }

  nlohmann::json rows = nlohmann::json::array();
  for (std::int64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    const std::int64_t count = bytes / 4;
    Tensor buffer;
    {
      MemoryCategoryScope category(MemoryCategory::communication);
      buffer = Tensor::zeros(Shape{count}, DType::f32, device);
    }
    // Algorithms take turns in short rounds (about --round-ms each), as many rounds as fit in
    // --seconds, so machine noise hits them alike; each algorithm's time is its median round.
    std::vector<int> calls(algorithms.size(), options.iterations);
    std::vector<double> probe(algorithms.size());
    std::vector<std::vector<double>> round_seconds(algorithms.size());
    for (std::size_t a = 0; a < algorithms.size(); ++a) {
      auto call = [&] { comm::allreduce(group, buffer, comm::ReduceOp::sum, algorithms[a]); };
      for (int i = 0; i < options.warmup; ++i) call();
      probe[a] = std::max(time_calls(call, 1), 1e-7);
      if (calls[a] <= 0) calls[a] = std::clamp(static_cast<int>(options.round_ms * 1e-3 / probe[a]), 1, 1000);
    }
    int rounds = options.rounds;
    if (rounds <= 0) {
      double round_cost = 0;
      for (std::size_t a = 0; a < algorithms.size(); ++a) round_cost += calls[a] * probe[a];
      rounds = std::clamp(static_cast<int>(options.seconds / round_cost), 7, 301);
    }
    MPI_Bcast(calls.data(), static_cast<int>(calls.size()), MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&rounds, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int round = 0; round < rounds; ++round)
      for (std::size_t a = 0; a < algorithms.size(); ++a)
        round_seconds[a].push_back(
            time_calls([&] { comm::allreduce(group, buffer, comm::ReduceOp::sum, algorithms[a]); }, calls[a]));
    for (std::size_t a = 0; a < algorithms.size(); ++a) {
      const comm::AllreduceAlgorithm algorithm = algorithms[a];
      std::sort(round_seconds[a].begin(), round_seconds[a].end());
      const double seconds = round_seconds[a][round_seconds[a].size() / 2];
      const double algbw = static_cast<double>(bytes) / seconds / 1e9;
      const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
      nlohmann::json row{{"algorithm", comm::algorithm_name(algorithm)},
                         {"bytes", bytes},
                         {"ranks", ranks},
                         {"time_us", seconds * 1e6},
                         {"algbw_gbps", algbw},
                         {"busbw_gbps", busbw}};
      double model_us = 0;
      if (shaped && even_nodes && algorithm != comm::AllreduceAlgorithm::mpi) {
        const int nodes = group.nodes(), per_node = group.node_sizes().front();
        const comm::AllreduceTraffic traffic =
            algorithm == comm::AllreduceAlgorithm::ring
                ? comm::ring_traffic(bytes, nodes, per_node, options.shape_intra_gbps, options.shape_inter_gbps)
                : comm::hierarchical_traffic(bytes, nodes, per_node, options.shape_intra_gbps, options.shape_inter_gbps);
        model_us = traffic.seconds * 1e6;
        row["model_us"] = model_us;
      }
      if (root && options.json) {
        rows.push_back(row);
      } else if (root) {
        std::printf("%-13s %12lld %6d %12.1f %11.3f %11.3f", std::string(comm::algorithm_name(algorithm)).c_str(),
                    static_cast<long long>(bytes), ranks, seconds * 1e6, algbw, busbw);
        if (model_us > 0) std::printf(" %11.1f", model_us);
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  if (root && options.json) std::printf("%s\n", rows.dump(1).c_str());
  if (shaped) comm::disable_link_shaping();
}

}  // namespace

void add_bench_allreduce_command(CLI::App& bench) {
  static AllreduceBenchOptions options;
  CLI::App* cmd = bench.add_subcommand("allreduce", "Allreduce time and bandwidth per algorithm (run under mpirun)");
  cmd->add_flag("--json", options.json,
                "print a JSON array of rows {algorithm,bytes,ranks,time_us,algbw_gbps,busbw_gbps} on rank 0");
  cmd->add_option("--algorithms", options.algorithms, "algorithms to time: mpi (the backend's own) ring hierarchical")
      ->delimiter(',');
  cmd->add_option("--backend", options.backend,
                  "mpi (host memory) or nccl (device memory on each rank's GPU: local rank % GPUs; ring and "
                  "hierarchical then run their steps on NCCL)")
      ->capture_default_str();
  cmd->add_option("--min-bytes", options.min_bytes, "smallest message (bytes, suffixes K M G allowed)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--max-bytes", options.max_bytes, "largest message (bytes, suffixes K M G allowed)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--factor", options.factor, "size step (default 4: 4K 16K 64K ...)");
  cmd->add_option("--ranks-per-node", options.ranks_per_node,
                  "pretend nodes: K ranks each, or sizes like 3,3,2 (default: LOOM_RANKS_PER_NODE, else physical)");
  // Given values must be in range (their defaults, 0 = "about --round-ms worth", are not given).
  cmd->add_option("--iterations", options.iterations, "timed calls per round (default: about --round-ms worth)")
      ->check(CLI::Range(1, 1'000'000));
  cmd->add_option("--round-ms", options.round_ms, "length of one algorithm's turn when --iterations is not given")
      ->check(CLI::Range(0.001, 60'000.0));
  cmd->add_option("--rounds", options.rounds,
                  "rounds in which the algorithms take turns; the median round counts (default: what fits in --seconds)")
      ->check(CLI::Range(1, 100'000));
  cmd->add_option("--seconds", options.seconds, "time to spend per size, all algorithms together (default 3)")
      ->check(CLI::Range(0.001, 86'400.0));
  cmd->add_option("--warmup", options.warmup, "untimed calls first")->check(CLI::Range(0, 1'000'000));
  cmd->add_option("--segment-kb", options.segment_kb, "ring segment size in KiB (default: LOOM_RING_SEGMENT_KB or 1024)");
  cmd->add_option("--shape-intra-gbps", options.shape_intra_gbps, "shape loom's intra-node links to this many GB/s")
      ->check(CLI::Range(1e-6, 1e6));
  cmd->add_option("--shape-inter-gbps", options.shape_inter_gbps, "shape loom's inter-node links to this many GB/s")
      ->check(CLI::Range(1e-6, 1e6));
  cmd->callback([] { run(options); });
}

}  // namespace loom::apps
