// A peer that never sends: with LOOM_COMM_TIMEOUT_S=1 the waiting rank's watchdog must end the
// whole job with a message naming the rank and what it waited for (ctest matches that message).
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include <loom/comm/runtime.h>
#include <loom/comm/stage_link.h>
#include <loom/comm/watchdog.h>

using namespace loom::comm;

TEST_CASE("a receive that never completes aborts the job") {
  REQUIRE(world_size() == 2);
  REQUIRE(comm_timeout_seconds() == 1.0);
  StageLink link(MPI_COMM_WORLD, 0, {1}, {0});
  if (world_rank() == 0) {
    link.post_receive(loom::comm::Direction::forward, 0, 4).wait();
  } else {
    // Rank 1 is "dead": it stays out of MPI and never sends.
    std::this_thread::sleep_for(std::chrono::seconds(30));
  }
  FAIL("the watchdog should have ended the job");
}
