// Every allreduce algorithm against a double-precision reference built from all ranks' inputs
// (each rank regenerates every other rank's input), for sizes 0, 1, small, prime and ~1 MB, on
// several node layouts (one node, one rank per node, even and uneven nodes) and on sub-groups.
// Also: the same bits on every member, the same bits run to run, and exact integer sums.
#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include <catch2/catch.hpp>

#include <loom/comm/allreduce.h>
#include <loom/comm/mpi_session.h>
#include <loom/core/tensor.h>

#include "comm_test_support.h"

using namespace loom;
using namespace loom::comm;
using namespace loom::comm::testing;

namespace {

struct Reference {
  std::vector<double> sum;      // of the inputs as stored in the dtype, in double
  std::vector<double> abs_sum;  // for the rounding bound
};

const Reference& reference(const std::vector<int>& members, std::int64_t count, DType dtype, std::uint64_t salt) {
  static std::map<std::tuple<std::vector<int>, std::int64_t, DType, std::uint64_t>, Reference> cache;
  auto [it, added] = cache.try_emplace({members, count, dtype, salt});
  if (added) {
    it->second.sum.assign(count, 0.0);
    it->second.abs_sum.assign(count, 0.0);
    for (int member : members)
      for (std::int64_t i = 0; i < count; ++i) {
        double v = input_value(member, i, salt);
        if (dtype == DType::f32) v = static_cast<float>(v);
        it->second.sum[i] += v;
        it->second.abs_sum[i] += std::abs(v);
      }
  }
  return it->second;
}

std::uint64_t fingerprint(const void* data, std::size_t bytes) {
  std::uint64_t hash = 1469598103934665603ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ULL;
  return hash;
}

// True when every member of `comm` holds the same bytes.
bool same_on_all_members(Communicator& comm, const void* data, std::size_t bytes) {
  const std::uint64_t mine = fingerprint(data, bytes);
  std::uint64_t low = 0, high = 0;
  MPI_Allreduce(&mine, &low, 1, MPI_UINT64_T, MPI_MIN, comm.mpi_comm());
  MPI_Allreduce(&mine, &high, 1, MPI_UINT64_T, MPI_MAX, comm.mpi_comm());
  return low == high;
}

std::vector<Topology> topologies_to_try() {
  const int size = world_size();
  std::vector<Topology> result{Topology::detect()};
  for (const std::string& layout : node_layouts(size))
    result.push_back(Topology::from_node_sizes(parse_node_sizes(layout, size, "test layout"), "layout " + layout));
  return result;
}

// The world, and (from 3 ranks) two interleaved halves reducing at the same time.
std::vector<std::unique_ptr<ReduceGroup>> groups_for(const Topology& topology) {
  std::vector<std::unique_ptr<ReduceGroup>> groups;
  auto world = make_communicator(Backend::mpi, MPI_COMM_WORLD);
  std::unique_ptr<Communicator> half;
  if (world_size() >= 3) half = world->split(world_rank() % 2, world_rank());
  groups.push_back(std::make_unique<ReduceGroup>(std::move(world), topology));
  if (half) groups.push_back(std::make_unique<ReduceGroup>(std::move(half), topology));
  return groups;
}

template <typename T>
void fill(std::vector<T>& data, std::int64_t count, std::uint64_t salt) {
  data.resize(count);
  for (std::int64_t i = 0; i < count; ++i) data[i] = static_cast<T>(input_value(world_rank(), i, salt));
}

template <typename T>
void check_against_reference(ReduceGroup& group, std::int64_t count, ReduceOp op, AllreduceAlgorithm algorithm,
                             std::uint64_t salt) {
  constexpr DType dtype = dtype_of<T>::value;
  const Reference& ref = reference(group.members().world_ranks(), count, dtype, salt);
  std::vector<T> data;
  fill(data, count, salt);
  if constexpr (std::is_same_v<T, float>) {
    // The tensor entry point, for f32.
    Tensor tensor = Tensor::from_vector(data, Shape{count});
    allreduce(group, tensor, op, algorithm);
    if (count > 0) std::memcpy(data.data(), tensor.raw_data(), count * sizeof(T));
  } else {
    allreduce(group, data.data(), count, dtype, op, algorithm);
  }
  const double factor = op == ReduceOp::average ? 1.0 / group.size() : 1.0;
  const double epsilon = std::is_same_v<T, float> ? 0x1p-24 : 0x1p-53;
  std::int64_t wrong = 0, first_wrong = -1;
  for (std::int64_t i = 0; i < count; ++i) {
    const double expected = ref.sum[i] * factor;
    const double bound = (group.size() + 2) * epsilon * ref.abs_sum[i] * factor + 1e-300;
    if (!(std::abs(static_cast<double>(data[i]) - expected) <= bound)) {
      if (first_wrong < 0) first_wrong = i;
      ++wrong;
    }
  }
  INFO("first wrong element " << first_wrong << " of " << count);
  CHECK(wrong == 0);
  CHECK(same_on_all_members(group.members(), data.data(), count * sizeof(T)));
}

}  // namespace

TEST_CASE("every algorithm matches a double-precision reference on every node layout") {
  const std::vector<std::int64_t> counts{0, 1, 2, 7, 1009, (1 << 18) + 3};
  for (const Topology& topology : topologies_to_try()) {
    for (auto& group : groups_for(topology)) {
      for (std::int64_t count : counts)
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::average})
          for (AllreduceAlgorithm algorithm : all_algorithms()) {
            INFO(topology.describe() << "; group of " << group->describe() << "; " << algorithm_name(algorithm) << " "
                                     << reduce_op_name(op) << " of " << count);
            const std::uint64_t salt = static_cast<std::uint64_t>(count) * 4 + static_cast<int>(op);
            check_against_reference<float>(*group, count, op, algorithm, salt);
            check_against_reference<double>(*group, count, op, algorithm, salt);
          }
    }
  }
}

TEST_CASE("allreduce gives the same bits run to run") {
  for (const Topology& topology : topologies_to_try()) {
    auto groups = groups_for(topology);
    ReduceGroup& group = *groups.front();
    for (AllreduceAlgorithm algorithm : all_algorithms()) {
      INFO(topology.describe() << "; " << algorithm_name(algorithm));
      std::vector<float> first, again;
      fill(first, 100003, 77);
      fill(again, 100003, 77);
      allreduce(group, first.data(), 100003, DType::f32, ReduceOp::average, algorithm);
      allreduce(group, again.data(), 100003, DType::f32, ReduceOp::average, algorithm);
      CHECK(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("integer sums are exact") {
  const Topology topology = Topology::from_node_sizes(parse_node_sizes("2", world_size(), "test"));
  auto groups = groups_for(topology);
  ReduceGroup& group = *groups.front();
  for (AllreduceAlgorithm algorithm : all_algorithms()) {
    INFO(algorithm_name(algorithm));
    const std::int64_t count = 1013;
    std::vector<std::int64_t> wide(count);
    std::vector<std::int32_t> narrow(count);
    for (std::int64_t i = 0; i < count; ++i) {
      wide[i] = (std::int64_t{1} << 40) * (world_rank() + 1) + i;
      narrow[i] = static_cast<std::int32_t>(1000 * world_rank() - i);
    }
    allreduce(group, wide.data(), count, DType::i64, ReduceOp::sum, algorithm);
    allreduce(group, narrow.data(), count, DType::i32, ReduceOp::sum, algorithm);
    const std::int64_t n = world_size();
    bool exact = true;
    for (std::int64_t i = 0; i < count; ++i) {
      exact = exact && wide[i] == (std::int64_t{1} << 40) * n * (n + 1) / 2 + n * i;
      exact = exact && narrow[i] == static_cast<std::int32_t>(1000 * n * (n - 1) / 2 - n * i);
    }
    CHECK(exact);
  }
  std::vector<std::int32_t> values(4, 1);
  CHECK_THROWS_AS(allreduce(group, values.data(), 4, DType::i32, ReduceOp::average, AllreduceAlgorithm::ring), Error);
  CHECK_THROWS_AS(parse_algorithm("tree"), Error);
}

TEST_CASE("hierarchical shards on uneven nodes") {
  if (world_size() != 8) return;
  const Topology topology = Topology::from_node_sizes({3, 3, 2});
  ReduceGroup group(make_communicator(Backend::mpi, MPI_COMM_WORLD), topology);
  CHECK(group.nodes() == 3);
  CHECK(group.shards() == 3);
  CHECK(group.node_sizes() == std::vector<int>{3, 3, 2});
  const int rank = world_rank();
  const Range owned = group.owned_shards();
  if (rank < 6) {
    CHECK(owned == Range{rank % 3, rank % 3 + 1});
    CHECK(group.intra().size() == 3);
  } else {
    // The two-rank node: its first rank carries shards 0 and 1, its second shard 2.
    CHECK(owned == (rank == 6 ? Range{0, 2} : Range{2, 3}));
    CHECK(group.intra().size() == 2);
  }
  for (int shard = static_cast<int>(owned.begin); shard < owned.end; ++shard) CHECK(group.inter(shard).size() == 3);
  const RangeSplit local = group.intra_partition(10);  // shards [0,4) [4,7) [7,10)
  if (rank >= 6) CHECK(local.part(0) == Range{0, 7});
  if (rank >= 6) CHECK(local.part(1) == Range{7, 10});
}

TEST_CASE("reduce-scatter and allgather on uneven partitions, ring and halving exchanges") {
  auto comm = make_communicator(Backend::mpi, MPI_COMM_WORLD);
  const int n = comm->size(), r = comm->rank();
  std::vector<std::int64_t> offsets{0};
  for (int p = 0; p < n; ++p) offsets.push_back(offsets.back() + (p * 3) % 5);  // sizes 0, 3, 1, 4, 2, 0, ...
  const RangeSplit parts(offsets);
  for (Exchange exchange : {Exchange::ring, Exchange::halving}) {
    INFO((exchange == Exchange::ring ? "ring" : "halving"));
    // Multiples of 2^-20: every summation order gives the exact sum.
    std::vector<double> data(parts.total());
    for (std::int64_t i = 0; i < parts.total(); ++i) data[i] = dyadic_value(r, i, 5);
    comm->reduce_scatter(data.data(), parts, DType::f64, 0.5, exchange);
    bool exact = true;
    for (std::int64_t i = parts.part(r).begin; i < parts.part(r).end; ++i) {
      double sum = 0;
      for (int member = 0; member < n; ++member) sum += dyadic_value(member, i, 5);
      exact = exact && data[i] == 0.5 * sum;
    }
    CHECK(exact);

    std::vector<std::int32_t> gathered(parts.total(), -1);
    for (std::int64_t i = parts.part(r).begin; i < parts.part(r).end; ++i) gathered[i] = 1000 * r + static_cast<int>(i);
    comm->allgather(gathered.data(), parts, DType::i32, exchange);
    bool complete = true;
    for (int p = 0; p < n; ++p)
      for (std::int64_t i = parts.part(p).begin; i < parts.part(p).end; ++i)
        complete = complete && gathered[i] == 1000 * p + static_cast<int>(i);
    CHECK(complete);
  }
}
