// Every communicator one rank needs for pipeline + data parallelism, built once from the layout.
//
//   world        every rank (MPI, host memory)
//   stage(s)     the ranks of stage s (MPI): stage-wide control such as metrics or a broadcast
//   replicas(s)  the same ranks as the gradient-reduction group of stage s, on the chosen backend,
//                with its intra-node and inter-node sub-groups (reduce_group.h); a separate
//                communicator, so the bucketer's progress thread never shares one with others
//   link(s)      the boundary between stage s and s+1 (stage_link.h), over a world communicator
//                reserved for boundary traffic, its rows host-staged over MPI or device-direct
//                (NCCL on CUDA: a communicator per direction over the ranks of both sides)
// A rank holds the groups of the stages it belongs to (several under interleaved schedules).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/comm/parallel_layout.h>
#include <loom/comm/reduce_group.h>
#include <loom/comm/stage_link.h>
#include <loom/comm/topology.h>

namespace loom::comm {

class ProcessGroups {
 public:
  // Collective over MPI_COMM_WORLD. The layout must fit in the world. `reduce_backends` (one per
  // stage of the layout, or empty: all mpi) says what each stage's replica group reduces with: mpi
  // on host memory, or nccl on `device` (this rank's GPU). `boundary_paths` (one per boundary,
  // stages() - 1, or empty: all host-staged) says how the rows cross each stage boundary;
  // device_direct needs `device` to be a device (cuda: NCCL, sim: its ordered MPI stand-in).
  ProcessGroups(const ParallelLayout& layout, const Topology& topology, std::vector<Backend> reduce_backends = {},
                Device device = Device::cpu(), std::vector<BoundaryPath> boundary_paths = {});
  ~ProcessGroups();
  ProcessGroups(const ProcessGroups&) = delete;
  ProcessGroups& operator=(const ProcessGroups&) = delete;

  const ParallelLayout& layout() const { return layout_; }
  const Topology& topology() const { return topology_; }
  Communicator& world() { return *world_; }
  // The (stage, replica) positions of this rank, in stage order.
  const std::vector<StagePosition>& positions() const { return positions_; }
  bool holds(int stage) const;

  Communicator& stage(int stage);
  ReduceGroup& replicas(int stage);
  StageLink& link(int upstream_stage);

 private:
  void connect_boundaries(const std::vector<BoundaryPath>& paths, Device device);

  ParallelLayout layout_;
  Topology topology_;
  std::unique_ptr<Communicator> world_;
  std::vector<StagePosition> positions_;
  std::map<int, std::unique_ptr<Communicator>> stages_;
  std::map<int, std::unique_ptr<ReduceGroup>> replicas_;
  MPI_Comm boundary_comm_ = MPI_COMM_NULL;
  std::map<int, std::unique_ptr<StageLink>> links_;
};

}  // namespace loom::comm
