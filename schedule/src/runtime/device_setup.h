// Where a rank of the Trainer computes, from TrainerConfig::device (trainer.h), and the one line
// that says how its tensors move.
#pragma once

#include <string>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/comm/device_placement.h>
#include <loom/comm/parallel_layout.h>
#include <loom/core/device.h>

namespace loom::runtime::detail {

// `--reduce-backend` alone (no MPI): auto, mpi or nccl.
void validate_reduce_backend(const std::string& text);

// What each stage of `layout` reduces its gradients with, and the line rank 0 prints about it.
struct ReducePlan {
  std::vector<comm::Backend> backends;  // per layout stage
  std::string line;  // "device cuda:0: stage boundaries are host-staged over MPI (...); the gradient allreduce ..."
};
// `choice` is --reduce-backend: auto takes NCCL for every stage whose replicas each have a GPU of
// their own (placement.nccl_obstacle), else host-staged MPI; nccl insists (an error names the
// stage and the obstacle); mpi host-stages every stage. A stage of one replica reduces nothing
// (mpi, no NCCL communicator). Off CUDA every stage is mpi, and nccl is an error.
ReducePlan plan_reduction(const std::string& choice, Device device, const comm::ParallelLayout& layout,
                          const comm::DevicePlacement& placement);

}  // namespace loom::runtime::detail
