// loom's default thread count against the process's CPU affinity, read independently from
// /proc/self/status, and the one-line warning when more threads are asked for than it allows.
#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <sched.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <loom/core/threads.h>

using namespace loom;

namespace {

// CPUs in the "Cpus_allowed_list:" line of /proc/self/status ("0-3,8,10-11" is 7).
int allowed_cpus_from_proc() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
    std::stringstream list(line.substr(line.find(':') + 1));
    std::string range;
    int count = 0;
    while (std::getline(list, range, ',')) {
      const auto dash = range.find('-');
      count += dash == std::string::npos ? 1 : std::stoi(range.substr(dash + 1)) - std::stoi(range.substr(0, dash)) + 1;
    }
    return count;
  }
  return 0;
}

void clear_thread_environment() {
  for (const char* name : {"LOOM_NUM_THREADS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"})
    ::unsetenv(name);
}

}  // namespace

TEST_CASE("the default thread count is the cores of the CPU affinity, shared by unbound local ranks", "[threads]") {
  clear_thread_environment();
  const int allowed = allowed_cpus_from_proc();
  REQUIRE(allowed >= 1);
  CHECK(affinity_cores() == allowed);
  const int machine = static_cast<int>(std::thread::hardware_concurrency());
  CHECK(default_num_threads() == std::min(allowed, machine));
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  CHECK(default_num_threads() == std::max(1, std::min(allowed, machine / 2)));
  ::setenv("LOOM_NUM_THREADS", std::to_string(allowed).c_str(), 1);  // no more than allowed: no warning yet
  CHECK(default_num_threads() == allowed);
  clear_thread_environment();
}

TEST_CASE("a process narrowed to one core defaults to one thread and warns once when asked for more",
          "[threads]") {
  clear_thread_environment();
  cpu_set_t original, one;
  REQUIRE(::sched_getaffinity(0, sizeof original, &original) == 0);
  int first_cpu = 0;
  while (!CPU_ISSET(first_cpu, &original)) ++first_cpu;
  CPU_ZERO(&one);
  CPU_SET(first_cpu, &one);
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);  // this thread, which asks below
  CHECK(affinity_cores() == 1);
  CHECK(default_num_threads() == 1);

  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  set_num_threads(1);
  CHECK(log.str().empty());
  set_num_threads(2);
  set_num_threads(3);
  spdlog::set_default_logger(previous);
  REQUIRE(::sched_setaffinity(0, sizeof original, &original) == 0);
  set_num_threads(1);

  const std::string text = log.str();
  CHECK(text.find("2 threads requested (--threads) but this process may run on 1 core") != std::string::npos);
  CHECK(text.find("--bind-to none") != std::string::npos);
  CHECK(text.find('\n') == text.size() - 1);  // one line, not one per call
}
