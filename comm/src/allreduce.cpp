#include <loom/comm/allreduce.h>

#include <loom/base/error.h>

namespace loom::comm {

std::string_view reduce_op_name(ReduceOp op) { return op == ReduceOp::sum ? "sum" : "average"; }

std::string_view algorithm_name(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::mpi: return "mpi";
    case AllreduceAlgorithm::ring: return "ring";
    case AllreduceAlgorithm::hierarchical: return "hierarchical";
  }
  return "?";
}

AllreduceAlgorithm parse_algorithm(std::string_view name, std::string_view source) {
  for (AllreduceAlgorithm algorithm : all_algorithms())
    if (name == algorithm_name(algorithm)) return algorithm;
  LOOM_THROW(source, source.empty() ? "" : ": ", "unknown allreduce algorithm '", name,
             "' (expected mpi, ring or hierarchical)");
}

const std::vector<AllreduceAlgorithm>& all_algorithms() {
  static const std::vector<AllreduceAlgorithm> algorithms{AllreduceAlgorithm::mpi, AllreduceAlgorithm::ring,
                                                          AllreduceAlgorithm::hierarchical};
  return algorithms;
}

namespace {

void ring_allreduce(Communicator& comm, void* data, std::int64_t count, DType dtype, double scale) {
  const RangeSplit parts = RangeSplit::even(count, comm.size());
  comm.reduce_scatter(data, parts, dtype, scale);
  comm.allgather(data, parts, dtype);
}

void hierarchical_allreduce(ReduceGroup& group, void* data, std::int64_t count, DType dtype, double scale) {
  const RangeSplit local_parts = group.intra_partition(count);
  const RangeSplit shards = RangeSplit::even(count, group.shards());
  char* base = static_cast<char*>(data);
  const std::size_t element = dtype_size(dtype);
  group.intra().reduce_scatter(data, local_parts, dtype, 1.0, Exchange::halving);
  for (int shard = static_cast<int>(group.owned_shards().begin); shard < group.owned_shards().end; ++shard)
    ring_allreduce(group.inter(shard), base + shards.part(shard).begin * element, shards.part(shard).size(), dtype, scale);
  group.intra().allgather(data, local_parts, dtype, Exchange::halving);
}

}  // namespace

void allreduce(ReduceGroup& group, void* data, std::int64_t count, DType dtype, ReduceOp op, AllreduceAlgorithm algorithm) {
  LOOM_CHECK(count >= 0, "allreduce of ", count, " elements");
  LOOM_CHECK(op == ReduceOp::sum || dtype == DType::f32 || dtype == DType::f64, "an average needs a floating dtype, not ",
             dtype_name(dtype));
  if (count == 0) return;
  const double scale = op == ReduceOp::average ? 1.0 / group.size() : 1.0;
  switch (algorithm) {
    case AllreduceAlgorithm::mpi: return group.members().allreduce(data, count, dtype, scale);
    case AllreduceAlgorithm::ring: return ring_allreduce(group.members(), data, count, dtype, scale);
    case AllreduceAlgorithm::hierarchical: return hierarchical_allreduce(group, data, count, dtype, scale);
  }
}

void allreduce(ReduceGroup& group, const Tensor& tensor, ReduceOp op, AllreduceAlgorithm algorithm) {
  if (!tensor.defined() || tensor.numel() == 0) return;
  LOOM_CHECK(tensor.device() == group.members().device(), "allreduce of a tensor on ", tensor.device().str(), " over a ",
             backend_name(group.members().backend()), " group on ", group.members().device().str());
  allreduce(group, tensor.raw_data(), tensor.numel(), tensor.dtype(), op, algorithm);
}

}  // namespace loom::comm
