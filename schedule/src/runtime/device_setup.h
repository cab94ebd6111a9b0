// Where a rank of the Trainer computes, from TrainerConfig::device (trainer.h), how its tensors
// move between ranks, and the one line that says so.
#pragma once

#include <string>
#include <vector>

#include <loom/comm/boundary_transport.h>
#include <loom/comm/communicator.h>
#include <loom/comm/device_placement.h>
#include <loom/comm/parallel_layout.h>
#include <loom/core/device.h>

namespace loom::runtime::detail {

// A backend flag alone (no MPI): auto, mpi or nccl; else an error naming `flag`.
void validate_backend_flag(const char* flag, const std::string& text);

// What each stage of `layout` reduces its gradients with, how the rows cross each stage boundary,
// and the line rank 0 prints about it.
struct CommPlan {
  std::vector<comm::Backend> reduce;                 // per layout stage
  std::vector<comm::BoundaryPath> boundaries;        // per stage boundary (stages - 1)
  std::string line;  // "device cuda:0: stage boundaries go device to device on NCCL; the gradient allreduce ..."
};
// `reduce_choice` is --reduce-backend, `boundary_choice` --boundary-backend. auto takes NCCL for
// every group whose ranks each have a GPU of their own (placement.direct_obstacle): a stage's
// replicas for its allreduce, the ranks of both sides for a boundary; else host-staged MPI. nccl
// insists (an error names the stage or boundary and the obstacle); mpi host-stages all. A stage of
// one replica reduces nothing (mpi, no NCCL communicator). Off CUDA everything is mpi, and nccl is
// an error, except that a sim run's boundaries between ranks on distinct sim devices
// (LOOM_SIM_DEVICES) go device-direct on NCCL's stand-in (boundary_transport.h).
CommPlan plan_communication(const std::string& reduce_choice, const std::string& boundary_choice, Device device,
                            const comm::ParallelLayout& layout, const comm::DevicePlacement& placement);

}  // namespace loom::runtime::detail
