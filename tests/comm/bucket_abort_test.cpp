// A rank that fails while a gradient bucket is in flight (its peers never join that allreduce)
// must end the job with a message, not hang in the bucketer's destructor until the watchdog.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <catch2/catch.hpp>

#include <loom/comm/gradient_bucketer.h>
#include <loom/comm/mpi_session.h>

using namespace loom;
using namespace loom::comm;

TEST_CASE("an exception with a bucket in flight aborts the job") {
  REQUIRE(world_size() == 2);
  ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD), Topology(2));
  if (world_rank() == 0) {
    std::vector<Tensor> gradients{Tensor::zeros(Shape{1 << 20})};
    GradientBucketer bucketer(group, gradients);
    std::atomic<bool> started{false};
    bucketer.set_observer([&](const BucketEvent& event) {
      if (event.kind == BucketEvent::Kind::started) started = true;
    });
    REQUIRE(bucketer.background());
    bucketer.mark_ready(0);  // launched; rank 1 never takes part
    while (!started) std::this_thread::yield();
    throw std::runtime_error("backward failed");
  }
  std::this_thread::sleep_for(std::chrono::seconds(30));
  FAIL("the job should have been aborted");
}
