// TraceRecorder keeps at most kBufferedEvents in memory and spools the rest; the trace rank 0
// writes has every event of every rank, in rank order per track, and the spool files are gone.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <mpi.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <loom/comm/parallel_layout.h>
#include <loom/comm/mpi_session.h>
#include <loom/core/timer.h>
#include <loom/runtime/trace_recorder.h>

using namespace loom;

TEST_CASE("a long trace is spooled and streamed, and every event arrives", "[runtime][trace]") {
  comm::ensure_mpi();
  auto world = comm::make_communicator(comm::Backend::mpi, MPI_COMM_WORLD);
  const int rank = world->rank(), size = world->size();
  const comm::ParallelLayout layout = comm::ParallelLayout::from_table({{0}, {1}});
  REQUIRE(size == 2);
  const std::size_t events = 3 * runtime::TraceRecorder::kBufferedEvents + 17 + static_cast<std::size_t>(rank);
  const std::string path = (std::filesystem::temp_directory_path() / "loom_trace_recorder_test.json").string();
  {
    runtime::TraceRecorder recorder(rank, false);
    for (std::size_t i = 0; i < events; ++i) {
      runtime::ActionEvent e;
      e.action = schedule::Action{schedule::Op::Forward, static_cast<int>(i)};
      e.stage = rank;
      e.start_us = now_us();
      e.end_us = e.start_us + 1;
      recorder.record(e);
    }
    // All but the last partial buffer already sit in this rank's spool file, not in memory.
    std::ifstream spool(std::filesystem::temp_directory_path() /
                        ("loom-trace-" + std::to_string(::getpid()) + "-rank" + std::to_string(rank) + ".jsonl"));
    REQUIRE(static_cast<bool>(spool));
    std::size_t lines = 0;
    for (std::string line; std::getline(spool, line);) ++lines;
    CHECK(lines == 3 * runtime::TraceRecorder::kBufferedEvents);
    recorder.write(*world, layout, 2, path);
  }
  world->barrier();
  if (rank == 0) {
    std::ifstream in(path);
    const nlohmann::json trace = nlohmann::json::parse(in);
    std::vector<std::size_t> per_rank(2, 0);
    std::vector<int> last(2, -1);
    for (const auto& e : trace.at("traceEvents")) {
      if (e.at("ph") == "M") continue;
      const int tid = e.at("tid");
      CHECK(e.at("args").at("microbatch").get<int>() == last[tid] + 1);  // in order within a rank
      last[tid] = e.at("args").at("microbatch");
      ++per_rank[tid];
    }
    CHECK(per_rank[0] == 3 * runtime::TraceRecorder::kBufferedEvents + 17);
    CHECK(per_rank[1] == 3 * runtime::TraceRecorder::kBufferedEvents + 18);
    std::filesystem::remove(path);
  }
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    CHECK(entry.path().filename().string().find("loom-trace-" + std::to_string(::getpid())) == std::string::npos);
}
