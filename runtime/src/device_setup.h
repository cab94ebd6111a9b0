// How a rank's tensors move between ranks, from the run's BackendChoice of each kind
// (trainer_config.h says what auto, mpi and nccl mean), and the one line that says so.
#pragma once

#include <string>
#include <vector>

#include <loom/comm/boundary_transport.h>
#include <loom/comm/communicator.h>
#include <loom/comm/device_placement.h>
#include <loom/comm/parallel_layout.h>
#include <loom/core/device.h>
#include <loom/runtime/trainer_config.h>

namespace loom::runtime::detail {

// What each stage of `layout` reduces its gradients with, how the rows cross each stage boundary,
// and the line rank 0 prints about it.
struct CommPlan {
  std::vector<comm::Backend> reduce;                 // per layout stage
  std::vector<comm::BoundaryPath> boundaries;        // per stage boundary (stages - 1)
  std::string line;  // "device cuda:0: stage boundaries go device to device on NCCL; the gradient allreduce ..."
};
// `reduce` is --reduce-backend, `boundary` --boundary-backend. An automatic choice takes NCCL for
// every group whose ranks each have a GPU of their own (placement.direct_obstacle); nccl insists
// (an error names the stage or boundary and the obstacle, or the device that is not CUDA). A stage
// of one replica reduces nothing (mpi, no NCCL communicator).
CommPlan plan_communication(BackendChoice reduce, BackendChoice boundary, Device device,
                            const comm::ParallelLayout& layout, const comm::DevicePlacement& placement);

}  // namespace loom::runtime::detail
