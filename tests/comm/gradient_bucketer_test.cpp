// Gradient buckets: bucketed results equal the unbucketed allreduce bit for bit (inputs are
// multiples of 2^-20, so every summation order gives the same exact sums), buckets fill in reverse
// layer order under the size cap, their flat buffers are charged to communication memory, and
// instrumentation shows buckets launching -- and finishing -- while backward is still marking
// gradients; bucketers sharing a progress thread run buckets one at a time in launch order;
// sharded buckets (ZeRO-1) reduce-scatter each member's slice.
#include <algorithm>
#include <cstring>
#include <mutex>

#include <catch2/catch.hpp>

#include <loom/comm/gradient_bucketer.h>
#include <loom/comm/mpi_session.h>
#include <loom/core/memory.h>

#include "comm_test_support.h"

using namespace loom;
using namespace loom::comm;
using namespace loom::comm::testing;

namespace {

// Parameter gradients of a small model, in layer order (sizes in elements).
const std::vector<std::int64_t> kSizes{3000, 64, 5000, 1, 2000, 0, 700, 9000, 128, 4096};

std::vector<Tensor> make_gradients(std::uint64_t salt) {
  std::vector<Tensor> gradients;
  for (std::size_t g = 0; g < kSizes.size(); ++g) {
    std::vector<float> values(kSizes[g]);
    for (std::int64_t i = 0; i < kSizes[g]; ++i) values[i] = static_cast<float>(dyadic_value(world_rank(), i, salt * 100 + g));
    gradients.push_back(Tensor::from_vector(values, Shape{kSizes[g]}));
  }
  return gradients;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

void refill(std::vector<Tensor>& gradients, std::uint64_t salt) {
  const std::vector<Tensor> fresh = make_gradients(salt);
  for (std::size_t g = 0; g < gradients.size(); ++g) gradients[g].copy_from(fresh[g]);
}

struct Recorder {
  std::mutex mutex;
  std::vector<BucketEvent> events;
  void operator()(const BucketEvent& event) {
    std::lock_guard lock(mutex);
    events.push_back(event);
  }
  std::vector<BucketEvent> of(BucketEvent::Kind kind, std::int64_t step) {
    std::lock_guard lock(mutex);
    std::vector<BucketEvent> result;
    for (const BucketEvent& e : events)
      if (e.kind == kind && e.step == step) result.push_back(e);
    return result;
  }
};

std::vector<Topology> topologies() {
  const int size = world_size();
  return {Topology(size), Topology::from_node_sizes(parse_node_sizes("2", size, "test"), "blocks of 2")};
}

}  // namespace

TEST_CASE("buckets fill in reverse layer order under the size cap") {
  ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD), Topology(world_size()));
  std::vector<Tensor> gradients = make_gradients(1);
  const auto before = memory_stats().live(MemoryCategory::communication);
  {
    GradientBucketer bucketer(group, gradients, BucketOptions{.bucket_bytes = 32 * 1024});
    // From the back (bytes): 16384+512; 36000 alone (over the cap); 2800+0+8000+4+20000+256 =
    // 31060; then 12000 would pass 32768, so gradient 0 starts the last bucket.
    REQUIRE(bucketer.buckets() == 4);
    CHECK(bucketer.bucket_gradients(0) == std::vector<int>{9, 8});
    CHECK(bucketer.bucket_gradients(1) == std::vector<int>{7});
    CHECK(bucketer.bucket_gradients(2) == std::vector<int>{6, 5, 4, 3, 2, 1});
    CHECK(bucketer.bucket_gradients(3) == std::vector<int>{0});
    CHECK(bucketer.bucket_of(5) == 2);
    std::int64_t total = 0;
    for (int b = 0; b < bucketer.buckets(); ++b) total += bucketer.bucket_bytes(b);
    CHECK(total == 4 * (3000 + 64 + 5000 + 1 + 2000 + 700 + 9000 + 128 + 4096));
    CHECK(memory_stats().live(MemoryCategory::communication) - before == total);
  }
  CHECK(memory_stats().live(MemoryCategory::communication) == before);
}

TEST_CASE("bucketed allreduce equals the unbucketed one, bit for bit, step after step") {
  for (const Topology& topology : topologies())
    for (AllreduceAlgorithm algorithm : all_algorithms())
      for (bool background : {true, false}) {
        INFO(topology.describe() << "; " << algorithm_name(algorithm) << (background ? "; progress thread" : "; inline"));
        ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD), topology);
        std::vector<Tensor> gradients = make_gradients(0);
        GradientBucketer bucketer(group, gradients,
                                  BucketOptions{.bucket_bytes = 20 * 1024, .algorithm = algorithm, .background = background});
        CHECK(bucketer.background() == (background && mpi_thread_multiple()));
        for (std::uint64_t step = 0; step < 3; ++step) {
          refill(gradients, step + 10);
          // Unbucketed reference: each gradient on its own.
          std::vector<Tensor> expected = make_gradients(step + 10);
          for (Tensor& g : expected) allreduce(group, g, ReduceOp::average, AllreduceAlgorithm::ring);
          for (int g = bucketer.gradients() - 1; g >= 0; --g) bucketer.mark_ready(g);
          bucketer.wait();
          for (std::size_t g = 0; g < gradients.size(); ++g)
            CHECK(same_bytes(gradients[g], expected[g]));
        }
      }
}

TEST_CASE("buckets launch and finish while backward is still running") {
  ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD),
                    Topology::from_node_sizes(parse_node_sizes("2", world_size(), "test")));
  std::vector<Tensor> gradients = make_gradients(3);
  const int count = static_cast<int>(gradients.size());
  GradientBucketer bucketer(group, gradients, BucketOptions{.bucket_bytes = 20 * 1024});
  Recorder recorder;
  bucketer.set_observer(std::ref(recorder));
  REQUIRE(bucketer.buckets() >= 3);

  for (std::int64_t step = 0; step < 2; ++step) {
    // Backward: gradients become final from the last layer to the first.
    for (int g = count - 1; g >= 0; --g) {
      bucketer.mark_ready(g);
      // Halfway through backward, the first bucket can be waited for: it has been reduced while
      // gradients of earlier layers are still to come.
      if (g == bucketer.bucket_gradients(0).back()) {
        bucketer.wait_bucket(0);
        const auto finished = recorder.of(BucketEvent::Kind::finished, step);
        REQUIRE(!finished.empty());
        CHECK(finished.front().bucket == 0);
        CHECK(finished.front().marked < count);
      }
    }
    bucketer.wait();
    const auto launched = recorder.of(BucketEvent::Kind::launched, step);
    REQUIRE(static_cast<int>(launched.size()) == bucketer.buckets());
    for (int b = 0; b < bucketer.buckets(); ++b) {
      CHECK(launched[b].bucket == b);  // reverse layer order
      // Launched as soon as its last gradient was marked: before backward ended, except the bucket
      // holding the first layer's gradient.
      if (b + 1 < bucketer.buckets()) CHECK(launched[b].marked < count);
    }
    CHECK(static_cast<int>(recorder.of(BucketEvent::Kind::finished, step).size()) == bucketer.buckets());
  }
}

// A rank holding two chunks has two bucketers; the executor gives them one progress thread. Marks
// that complete bucket 1 of the first bucketer, then the second bucketer's buckets, then the rest
// of the first: every bucket starts in that launch order, one at a time (each finishes before the
// next starts), and the sums are exact.
TEST_CASE("bucketers sharing a progress thread run buckets one at a time, in launch order") {
  if (!mpi_thread_multiple()) {
    WARN("SKIPPED: MPI without MPI_THREAD_MULTIPLE runs buckets inline");
    return;
  }
  ReduceGroup first_group(make_communicator(Backend::mpi, MPI_COMM_WORLD), Topology(world_size()));
  ReduceGroup second_group(make_communicator(Backend::mpi, MPI_COMM_WORLD), Topology(world_size()));
  auto progress = std::make_shared<ProgressThread>();
  std::vector<Tensor> first_gradients = make_gradients(6), second_gradients = make_gradients(7);
  const BucketOptions options{.bucket_bytes = 32 * 1024, .algorithm = AllreduceAlgorithm::ring, .progress = progress};
  GradientBucketer first(first_group, first_gradients, options), second(second_group, second_gradients, options);
  REQUIRE(first.buckets() == 4);  // {9, 8}, {7}, {6..1}, {0}: see the first test
  std::mutex mutex;
  std::vector<std::pair<int, BucketEvent>> events;  // (bucketer, event)
  for (int which : {0, 1})
    (which ? second : first).set_observer([&, which](const BucketEvent& e) {
      std::lock_guard lock(mutex);
      events.emplace_back(which, e);
    });
  first.mark_ready(7);                                       // launches first's bucket 1
  for (int g = second.gradients() - 1; g >= 0; --g) second.mark_ready(g);  // second's 0..3
  first.wait();                                              // first's 0, 2, 3
  second.wait();
  const std::vector<std::pair<int, int>> launch_order{{0, 1}, {1, 0}, {1, 1}, {1, 2}, {1, 3}, {0, 0}, {0, 2}, {0, 3}};
  std::vector<std::pair<int, int>> launched, started;
  for (std::size_t e = 0; e < events.size(); ++e) {
    const auto& [which, event] = events[e];
    if (event.kind == BucketEvent::Kind::launched) launched.emplace_back(which, event.bucket);
    if (event.kind != BucketEvent::Kind::started) continue;
    started.emplace_back(which, event.bucket);
    // The next event of the progress thread is this bucket's finish.
    auto next = std::find_if(events.begin() + static_cast<std::ptrdiff_t>(e) + 1, events.end(),
                             [](const auto& x) { return x.second.kind != BucketEvent::Kind::launched; });
    REQUIRE(next != events.end());
    CHECK(next->first == which);
    CHECK(next->second.bucket == event.bucket);
    CHECK(next->second.kind == BucketEvent::Kind::finished);
  }
  CHECK(launched == launch_order);
  CHECK(started == launch_order);
  for (auto [gradients, salt] : {std::pair{&first_gradients, 6}, std::pair{&second_gradients, 7}}) {
    std::vector<Tensor> expected = make_gradients(salt);
    for (Tensor& g : expected) allreduce(first_group, g, ReduceOp::average, AllreduceAlgorithm::ring);
    for (std::size_t g = 0; g < expected.size(); ++g) CHECK(same_bytes((*gradients)[g], expected[g]));
  }
}

TEST_CASE("wait() treats unmarked gradients as final, and double marks are errors") {
  ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD), Topology(world_size()));
  std::vector<Tensor> gradients = make_gradients(5);
  std::vector<Tensor> expected = make_gradients(5);
  for (Tensor& g : expected) allreduce(group, g, ReduceOp::average, AllreduceAlgorithm::mpi);
  GradientBucketer bucketer(group, gradients, BucketOptions{.bucket_bytes = 8 * 1024, .algorithm = AllreduceAlgorithm::mpi});
  bucketer.mark_ready(9);
  CHECK_THROWS_AS(bucketer.mark_ready(9), Error);
  CHECK_THROWS_AS(bucketer.mark_ready(42), Error);
  bucketer.wait();
  for (std::size_t g = 0; g < gradients.size(); ++g)
    CHECK(same_bytes(gradients[g], expected[g]));
}

// Gradients on a device (the sim device here, a GPU shared by several ranks in production) over an
// MPI group: the buckets are host memory, packing and unpacking stage device -> host -> device, and
// the sums equal the host run's bit for bit. The host path itself refuses a device tensor.
// ZeRO-1: member r keeps owners.part(r) of the flat order (gradients in layer order, gradient 4
// left out, as a tied copy would be). Buckets of consecutive gradients reduce-scatter: the member's
// part is the allreduced value, the rest stays its own input; the bucket holding gradient 4 is
// allreduced whole.
TEST_CASE("sharded buckets reduce-scatter each member's slice and leave the rest") {
  constexpr int kOutside = 4;
  BucketSharding sharding;
  std::int64_t flat = 0;
  for (std::size_t g = 0; g < kSizes.size(); ++g) {
    sharding.starts.push_back(static_cast<int>(g) == kOutside ? -1 : flat);
    if (static_cast<int>(g) != kOutside) flat += kSizes[g];
  }
  sharding.owners = RangeSplit::even(flat, world_size());
  for (const Topology& topology : topologies())
    for (bool background : {true, false}) {
      INFO(topology.describe() << (background ? "; progress thread" : "; inline"));
      ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD), topology);
      std::vector<Tensor> gradients = make_gradients(0);
      GradientBucketer bucketer(group, gradients,
                                BucketOptions{.bucket_bytes = 20 * 1024, .op = ReduceOp::average, .background = background},
                                sharding);
      int scattered = 0;
      for (int b = 0; b < bucketer.buckets(); ++b) {
        const std::vector<int>& members = bucketer.bucket_gradients(b);
        const bool outside = std::count(members.begin(), members.end(), kOutside) > 0;
        CHECK(bucketer.scattered(b) == !outside);
        scattered += bucketer.scattered(b);
      }
      CHECK(scattered >= 2);
      for (std::uint64_t step = 0; step < 2; ++step) {
        refill(gradients, step + 20);
        const std::vector<Tensor> inputs = make_gradients(step + 20);
        std::vector<Tensor> expected = make_gradients(step + 20);
        for (Tensor& g : expected) allreduce(group, g, ReduceOp::average, AllreduceAlgorithm::ring);
        for (int g = bucketer.gradients() - 1; g >= 0; --g) bucketer.mark_ready(g);
        bucketer.wait();
        const Range mine = sharding.owners.part(world_rank());
        for (std::size_t g = 0; g < gradients.size(); ++g) {
          INFO("gradient " << g);
          const bool whole = !bucketer.scattered(bucketer.bucket_of(static_cast<int>(g)));
          const std::vector<double> got = gradients[g].to_double_vector(), want = expected[g].to_double_vector(),
                                    own = inputs[g].to_double_vector();
          std::int64_t wrong = 0;
          for (std::int64_t i = 0; i < kSizes[g]; ++i) {
            const bool held = whole || (sharding.starts[g] + i >= mine.begin && sharding.starts[g] + i < mine.end);
            wrong += got[i] != (held ? want[i] : own[i]);
          }
          CHECK(wrong == 0);
        }
      }
    }
}

TEST_CASE("host-staged buckets: device gradients over an MPI group", "[device][sim]") {
  const Device sim = Device::sim();
  const Topology topology = Topology::from_node_sizes(parse_node_sizes("2", world_size(), "test"));
  // One group per bucketer: a group belongs to its bucketer's progress thread during a step.
  ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD), topology);
  ReduceGroup host_group(make_communicator(Backend::mpi, MPI_COMM_WORLD), topology);
  std::vector<Tensor> host = make_gradients(4), device;
  {
    MemoryCategoryScope category(MemoryCategory::gradients);
    for (const Tensor& g : host) device.push_back(g.to(sim));
  }
  const auto host_communication = memory_stats().live(MemoryCategory::communication);
  const auto device_communication = memory_stats(sim).live(MemoryCategory::communication);
  GradientBucketer host_bucketer(host_group, host, BucketOptions{.bucket_bytes = 20 * 1024});
  const auto host_buckets = memory_stats().live(MemoryCategory::communication) - host_communication;
  GradientBucketer staged(group, device, BucketOptions{.bucket_bytes = 20 * 1024});
  CHECK(!host_bucketer.staged());
  CHECK(staged.staged());
  CHECK(memory_stats().live(MemoryCategory::communication) - host_communication == 2 * host_buckets);
  CHECK(memory_stats(sim).live(MemoryCategory::communication) == device_communication);
  for (std::uint64_t step = 0; step < 2; ++step) {
    refill(host, step + 20);
    for (std::size_t g = 0; g < device.size(); ++g) device[g].copy_from(host[g]);
    // One bucketer in MPI at a time, as in training (one progress thread per rank): two inside
    // Open MPI at once take its wait-sync mutexes in both orders, which TSan reports.
    for (int g = host_bucketer.gradients() - 1; g >= 0; --g) host_bucketer.mark_ready(g);
    host_bucketer.wait();
    for (int g = staged.gradients() - 1; g >= 0; --g) staged.mark_ready(g);
    staged.wait();
    for (std::size_t g = 0; g < device.size(); ++g) {
      CHECK(device[g].device() == sim);
      CHECK(same_bytes(device[g].to(Device::cpu()), host[g]));
    }
  }
  CHECK_THROWS_WITH(allreduce(group, device[0], ReduceOp::sum, AllreduceAlgorithm::ring),
                    Catch::Contains("allreduce of a tensor on sim:0 over a mpi group on cpu"));
  std::vector<Tensor> mixed = {host[0], device[1]};
  CHECK_THROWS_WITH(GradientBucketer(group, mixed), Catch::Contains("gradient 1 is on sim:0 but the others are on cpu"));
}
