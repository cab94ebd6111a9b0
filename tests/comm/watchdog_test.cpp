// A peer that never sends: with a 1 s communication timeout the waiting rank's watchdog must end
// the whole job with a message naming the rank and what it waited for (ctest matches that message).
// The hidden cases ([.]) run as their own ctest entries, with their own rank counts.
#include <chrono>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include <loom/comm/communicator.h>
#include <loom/comm/mpi_session.h>
#include <loom/comm/stage_link.h>
#include <loom/comm/watchdog.h>

using namespace loom::comm;

namespace {

// The 1 s timeout is set once MPI is up, not through LOOM_COMM_TIMEOUT_S: that would watch
// MPI_Init_thread for 1 s too, which a sanitizer build on a loaded machine can take longer than,
// and the watchdog would then fire at start-up instead of at the stopped peer.
void time_out_after_one_second() {
  world_rank();
  set_comm_timeout_seconds(1.0);
}

}  // namespace

TEST_CASE("a receive that never completes aborts the job") {
  REQUIRE(world_size() == 2);
  time_out_after_one_second();
  StageLink link(MPI_COMM_WORLD, 0, {1}, {0});
  if (world_rank() == 0) {
    link.post_receive(loom::comm::Direction::forward, 0, 4).wait();
  } else {
    // Rank 1 is "dead": it stays out of MPI and never sends.
    std::this_thread::sleep_for(std::chrono::seconds(30));
  }
  FAIL("the watchdog should have ended the job");
}

// LOOM_COMM_TIMEOUT_S: anything but seconds in [0, kMaxCommTimeoutSeconds] is refused by name;
// 1e10 s used to overflow the nanosecond deadline into the past and abort healthy jobs at once.
TEST_CASE("the communication timeout is validated and its deadline never lies in the past", "[.][timeout]") {
  CHECK(comm_timeout_from_environment(nullptr) == kDefaultCommTimeoutSeconds);
  CHECK(comm_timeout_from_environment("") == kDefaultCommTimeoutSeconds);
  CHECK(comm_timeout_from_environment("0") == 0);
  CHECK(comm_timeout_from_environment("2.5") == 2.5);
  CHECK(kDefaultCommTimeoutSeconds < 600);
  for (const char* bad : {"1e10", "inf", "nan", "-1", "4abc", "abc", "1e6x"})
    CHECK_THROWS_WITH(comm_timeout_from_environment(bad),
                      Catch::Contains("LOOM_COMM_TIMEOUT_S") && Catch::Contains(bad) && Catch::Contains("[0, 1e+06]"));
  const std::string huge(100000, '9');
  CHECK_THROWS_WITH(comm_timeout_from_environment(huge.c_str()), Catch::Contains("...") && !Catch::Contains(huge));
  const auto now = std::chrono::steady_clock::now();
  CHECK(comm_deadline(now, kMaxCommTimeoutSeconds) > now + std::chrono::hours(24 * 11));
  CHECK_THROWS_AS(comm_deadline(now, 1e10), loom::Error);
  CHECK_THROWS_AS(set_comm_timeout_seconds(std::numeric_limits<double>::infinity()), loom::Error);
}

// Rank 0 waits for rank 1, which waits for rank 2, which stopped: the message must name rank 2,
// not the peer rank 0 waits for (ctest matches the message).
TEST_CASE("a chain of waits names the rank at its end", "[.][chain]") {
  REQUIRE(world_size() == 3);
  time_out_after_one_second();
  StageLink first(MPI_COMM_WORLD, 0, {1}, {0}), second(MPI_COMM_WORLD, 1, {2}, {1});
  if (world_rank() == 0) first.post_receive(loom::comm::Direction::forward, 0, 4).wait();
  if (world_rank() == 1) second.post_receive(loom::comm::Direction::forward, 0, 4).wait();
  std::this_thread::sleep_for(std::chrono::seconds(30));  // rank 2 is "stopped"
  FAIL("the watchdog should have ended the job");
}

// Three ranks wait in a barrier for the fourth: a collective has no peer, the census names rank 2.
TEST_CASE("a collective that one rank never joins names that rank", "[.][collective]") {
  REQUIRE(world_size() == 4);
  time_out_after_one_second();
  auto world = make_communicator(Backend::mpi, MPI_COMM_WORLD);
  if (world_rank() != 2) world->barrier();
  std::this_thread::sleep_for(std::chrono::seconds(30));
  FAIL("the watchdog should have ended the job");
}

// Its own entry (the watchdog cases above end their process): the error is a CommunicationError,
// and the executable's way out (apps/main.cpp's) ends this process with exit status 3 and one line,
// which ctest checks.
TEST_CASE("a failed MPI call is a CommunicationError, which the executable ends with exit 3", "[.][exit]") {
  loom::comm::ensure_mpi();
  bool communication = true;
  try {
    LOOM_THROW("bad input");
  } catch (const loom::CommunicationError&) {
  } catch (const loom::Error& e) {
    communication = false;
    CHECK(exit_status(e) == 1);  // not a communication failure
  }
  CHECK_FALSE(communication);
  try {
    LOOM_MPI_CHECK(MPI_ERR_COUNT);
  } catch (const loom::CommunicationError& e) {
    CHECK_THAT(e.what(), Catch::Contains("MPI error") && Catch::Contains("MPI_ERR_COUNT"));
    std::exit(end_with_error(e.what(), exit_status(e)));
  }
  FAIL("LOOM_MPI_CHECK of an error status did not throw");
}
