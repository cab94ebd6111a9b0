// Allreduce over a reduce group: sum or average, in place, any count, any number of members.
//
//   mpi           the backend's own collective (MPI_Allreduce; ncclAllReduce with NCCL)
//   ring          reduce-scatter + allgather around one ring of all members
//   hierarchical  reduce-scatter inside each node, allreduce of each shard across nodes (every
//                 local member carries its own shards at the same time), allgather inside the node
//
// Each algorithm gives bit-identical results run to run for the same inputs and layout, and the
// same bits on every member (every element is reduced on one member in a fixed order, then copied).
// An average is the sum scaled by 1/size, applied once by the member that owns the element.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <loom/comm/reduce_group.h>
#include <loom/core/tensor.h>

namespace loom::comm {

enum class ReduceOp : std::uint8_t { sum, average };
enum class AllreduceAlgorithm : std::uint8_t { mpi, ring, hierarchical };

std::string_view reduce_op_name(ReduceOp op);
std::string_view algorithm_name(AllreduceAlgorithm algorithm);
// "mpi", "ring", "hierarchical"; else a loom::Error, prefixed by `source` (a flag) when given.
AllreduceAlgorithm parse_algorithm(std::string_view name, std::string_view source = "");
const std::vector<AllreduceAlgorithm>& all_algorithms();

void allreduce(ReduceGroup& group, void* data, std::int64_t count, DType dtype, ReduceOp op,
               AllreduceAlgorithm algorithm);
// The tensor must live on the group's device (host for MPI, CUDA for NCCL).
void allreduce(ReduceGroup& group, const Tensor& tensor, ReduceOp op, AllreduceAlgorithm algorithm);

}  // namespace loom::comm
