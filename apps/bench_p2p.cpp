// `loom bench p2p`: latency and bandwidth of the stage-boundary path (StageLink) between world
// ranks 0 and 1, next to plain MPI point-to-point, so the cost of loom's header and bookkeeping
// shows. Latency: half a ping-pong round trip (activation forward, gradient back). Bandwidth:
// a stream of --window micro-batches with receives posted early, as a pipeline stage runs. The
// paths take turns in rounds and each figure is the median round.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <loom/comm/mpi_session.h>
#include <loom/comm/stage_link.h>

#include "commands.h"
#include "median.h"

namespace loom::apps {

namespace {

struct P2pBenchOptions {
  bool json = false;
  std::int64_t min_bytes = 4;
  std::int64_t max_bytes = 64 << 20;
  int factor = 4;
  int iterations = 0;  // per round; 0: about 0.2 s per size and path
  int rounds = 5;
  int window = 8;
};

// One path under test: ping-pong and stream over StageLink or plain MPI.
struct Path {
  virtual ~Path() = default;
  virtual void ping(std::int64_t tag) = 0;  // rank 0: send forward, receive backward
  virtual void pong(std::int64_t tag) = 0;  // rank 1: receive forward, send backward
  virtual void stream_send(std::int64_t first_tag, int count) = 0;
  virtual void stream_receive(std::int64_t first_tag, int count) = 0;
};

struct LinkPath final : Path {
  comm::StageLink link;
  Tensor payload;
  std::int64_t rows;
  LinkPath(MPI_Comm comm, std::int64_t floats) : link(comm, 0, {0}, {1}), payload(Tensor::zeros(Shape{floats, 1})), rows(floats) {}
  void ping(std::int64_t tag) override {
    comm::PendingReceive back = link.post_receive(comm::Direction::backward, tag, rows);
    link.send(comm::Direction::forward, tag, {payload}, rows);
    back.wait();
  }
  void pong(std::int64_t tag) override {
    link.post_receive(comm::Direction::forward, tag, rows).wait();
    link.send(comm::Direction::backward, tag, {payload}, rows);
  }
  void stream_send(std::int64_t first, int count) override {
    for (int i = 0; i < count; ++i) link.send(comm::Direction::forward, first + i, {payload}, rows);
    link.flush();
  }
  void stream_receive(std::int64_t first, int count) override {
    std::vector<comm::PendingReceive> receives;
    for (int i = 0; i < count; ++i) receives.push_back(link.post_receive(comm::Direction::forward, first + i, rows));
    for (auto& receive : receives) receive.wait();
  }
};

struct MpiPath final : Path {
  MPI_Comm comm;
  std::vector<float> out, in;
  MpiPath(MPI_Comm c, std::int64_t floats) : comm(c), out(floats), in(floats * 8) {}
  int count() const { return static_cast<int>(out.size()); }
  void ping(std::int64_t) override {
    MPI_Send(out.data(), count(), MPI_FLOAT, 1, 0, comm);
    MPI_Recv(in.data(), count(), MPI_FLOAT, 1, 0, comm, MPI_STATUS_IGNORE);
  }
  void pong(std::int64_t) override {
    MPI_Recv(in.data(), count(), MPI_FLOAT, 0, 0, comm, MPI_STATUS_IGNORE);
    MPI_Send(out.data(), count(), MPI_FLOAT, 0, 0, comm);
  }
  void stream_send(std::int64_t, int n) override {
    std::vector<MPI_Request> requests(n);
    for (int i = 0; i < n; ++i) MPI_Isend(out.data(), count(), MPI_FLOAT, 1, 1, comm, &requests[i]);
    MPI_Waitall(n, requests.data(), MPI_STATUSES_IGNORE);
  }
  void stream_receive(std::int64_t, int n) override {
    std::vector<MPI_Request> requests(n);
    in.resize(std::max<std::size_t>(in.size(), out.size() * n));
    for (int i = 0; i < n; ++i) MPI_Irecv(in.data() + i * out.size(), count(), MPI_FLOAT, 0, 1, comm, &requests[i]);
    MPI_Waitall(n, requests.data(), MPI_STATUSES_IGNORE);
  }
};

void run(const P2pBenchOptions& options) {
  const int rank = comm::world_rank();
  LOOM_CHECK(comm::world_size() >= 2, "loom bench p2p needs 2 ranks (mpirun -n 2 loom bench p2p)");
  LOOM_CHECK(options.min_bytes >= 4 && options.min_bytes <= options.max_bytes && options.factor >= 2 && options.window >= 1,
             "bad size range, --factor or --window");
  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  if (pair == MPI_COMM_NULL) return;  // ranks beyond the pair sit out

  if (rank == 0 && !options.json)
    std::printf("%-10s %12s %12s %14s %16s\n", "path", "bytes", "latency_us", "stream_us/msg", "bandwidth_GB/s");
  nlohmann::json rows = nlohmann::json::array();
  std::int64_t tag = 0;
  for (std::int64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    const std::int64_t floats = std::max<std::int64_t>(1, bytes / 4);
    // The two paths take turns, round after round, so machine noise hits both alike; each
    // figure is the median round.
    std::vector<std::unique_ptr<Path>> paths;
    paths.push_back(std::make_unique<LinkPath>(pair, floats));
    paths.push_back(std::make_unique<MpiPath>(pair, floats));
    const char* names[] = {"stage_link", "mpi"};
    std::vector<std::vector<double>> latency(paths.size()), per_message(paths.size());
    int iterations = options.iterations;
    for (std::size_t p = 0; p < paths.size(); ++p) {
      Path& path = *paths[p];
      rank == 0 ? path.ping(tag) : path.pong(tag);  // warm-up
      ++tag;
      if (iterations <= 0) {
        const double start = MPI_Wtime();
        rank == 0 ? path.ping(tag) : path.pong(tag);
        ++tag;
        iterations = std::clamp(static_cast<int>(0.2 / options.rounds / std::max(MPI_Wtime() - start, 1e-7)), 2, 5000);
        MPI_Bcast(&iterations, 1, MPI_INT, 0, pair);
      }
    }
    const int streams = std::max(1, iterations / options.window);
    for (int round = 0; round < options.rounds; ++round)
      for (std::size_t p = 0; p < paths.size(); ++p) {
        Path& path = *paths[p];
        MPI_Barrier(pair);
        double start = MPI_Wtime();
        for (int i = 0; i < iterations; ++i, ++tag) rank == 0 ? path.ping(tag) : path.pong(tag);
        latency[p].push_back((MPI_Wtime() - start) / iterations / 2);
        MPI_Barrier(pair);
        start = MPI_Wtime();
        for (int i = 0; i < streams; ++i, tag += options.window)
          rank == 0 ? path.stream_send(tag, options.window) : path.stream_receive(tag, options.window);
        MPI_Barrier(pair);
        per_message[p].push_back((MPI_Wtime() - start) / (streams * options.window));
      }
    if (rank != 0) continue;
    for (std::size_t p = 0; p < paths.size(); ++p) {
      const double one_way = median(latency[p]), streamed = median(per_message[p]);
      const double bandwidth = static_cast<double>(floats * 4) / streamed / 1e9;
      if (options.json) {
        rows.push_back({{"path", names[p]}, {"bytes", floats * 4}, {"latency_us", one_way * 1e6},
                        {"stream_us", streamed * 1e6}, {"bandwidth_gbps", bandwidth}});
      } else {
        std::printf("%-10s %12lld %12.2f %14.2f %16.3f\n", names[p], static_cast<long long>(floats * 4), one_way * 1e6,
                    streamed * 1e6, bandwidth);
        std::fflush(stdout);
      }
    }
  }
  if (rank == 0 && options.json) std::printf("%s\n", rows.dump(1).c_str());
  MPI_Comm_free(&pair);
}

}  // namespace

void add_bench_p2p_command(CLI::App& bench) {
  static P2pBenchOptions options;
  CLI::App* cmd = bench.add_subcommand("p2p", "Stage-boundary latency and bandwidth between ranks 0 and 1 (mpirun -n 2)");
  cmd->add_flag("--json", options.json,
                "print a JSON array of rows {path,bytes,latency_us,stream_us,bandwidth_gbps} on rank 0");
  cmd->add_option("--min-bytes", options.min_bytes, "smallest message (suffixes K M G allowed)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--max-bytes", options.max_bytes, "largest message (suffixes K M G allowed)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--factor", options.factor, "size step (default 4)");
  cmd->add_option("--iterations", options.iterations, "round trips per round (default: about 0.2 s worth in all)")
      ->check(CLI::Range(1, 1'000'000));
  cmd->add_option("--rounds", options.rounds, "rounds in which the paths take turns; the median round counts")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--window", options.window, "micro-batches in flight in the bandwidth stream")
      ->check(CLI::Range(1, 100'000));
  cmd->callback([] { run(options); });
}

}  // namespace loom::apps
