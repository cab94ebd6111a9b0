#include <loom/comm/process_groups.h>

#include <algorithm>

#include <loom/comm/mpi_session.h>
#include <loom/comm/watchdog.h>
#include <loom/base/error.h>

namespace loom::comm {

ProcessGroups::ProcessGroups(const ParallelLayout& layout, const Topology& topology, std::vector<Backend> reduce_backends,
                             Device device, std::vector<BoundaryPath> boundary_paths)
    : layout_(layout), topology_(topology) {
  const int size = world_size(), rank = world_rank();
  if (reduce_backends.empty()) reduce_backends.assign(static_cast<std::size_t>(layout_.stages()), Backend::mpi);
  LOOM_CHECK(static_cast<int>(reduce_backends.size()) == layout_.stages(), reduce_backends.size(),
             " reduce backends for the ", layout_.stages(), " stages of the layout");
  LOOM_CHECK(layout_.ranks_needed() <= size, "the layout (", layout_.describe(), ") needs ", layout_.ranks_needed(),
             " ranks but the job has ", size);
  LOOM_CHECK(topology_.world_size() == size, "the topology describes ", topology_.world_size(), " ranks but the job has ",
             size);
  world_ = make_communicator(Backend::mpi, MPI_COMM_WORLD);
  positions_ = layout_.positions(rank);

  // One world-collective split per stage (a rank may hold several stages), then the replica groups,
  // each collective over its own members only.
  for (int s = 0; s < layout_.stages(); ++s) {
    int key = -1;
    for (const StagePosition& position : positions_)
      if (position.stage == s) key = position.replica;
    auto group = world_->split(key >= 0 ? 0 : -1, key);
    if (group) stages_.emplace(s, std::move(group));
  }
  for (const StagePosition& position : positions_) {
    const Backend backend = reduce_backends[static_cast<std::size_t>(position.stage)];
    auto members = make_communicator(backend, stages_.at(position.stage)->mpi_comm(),
                                     backend == Backend::nccl ? device : Device::cpu());
    replicas_.emplace(position.stage, std::make_unique<ReduceGroup>(std::move(members), topology_));
  }

  connect_boundaries(boundary_paths, device);
}

// The stage links of this rank. A device-direct boundary on CUDA gets an NCCL communicator per
// direction over the ranks of both sides, split from the world (collective over every rank); a
// local one gets none.
void ProcessGroups::connect_boundaries(const std::vector<BoundaryPath>& paths, Device device) {
  const int boundaries = std::max(layout_.stages() - 1, 0);
  LOOM_CHECK(paths.empty() || static_cast<int>(paths.size()) == boundaries, paths.size(),
             " boundary paths for the ", boundaries, " stage boundaries of the layout");
  {
    WatchdogScope watch("MPI_Comm_dup (stage links)");
    LOOM_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &boundary_comm_));
  }
  for (int s = 0; s < boundaries; ++s) {
    if (!paths.empty() && paths[static_cast<std::size_t>(s)] == BoundaryPath::local) continue;  // no link
    const bool direct = !paths.empty() && paths[static_cast<std::size_t>(s)] == BoundaryPath::device_direct;
    LOOM_CHECK(!direct || !device.is_cpu(), "stage boundary ", s, ": device-direct transfers need a device, not cpu");
    const bool mine = holds(s) || holds(s + 1);
    std::unique_ptr<BoundaryTransport> forward, backward;
    if (direct && device.is_cuda()) {
      MPI_Comm members = MPI_COMM_NULL;
      {
        WatchdogScope watch("MPI_Comm_split (NCCL stage boundary)");
        LOOM_MPI_CHECK(MPI_Comm_split(boundary_comm_, mine ? 0 : MPI_UNDEFINED, world_rank(), &members));
      }
      if (members != MPI_COMM_NULL) {
        forward = make_nccl_transport(members, device);
        backward = make_nccl_transport(members, device);
        MPI_Comm_free(&members);
      }
    } else if (direct && mine) {
      forward = make_mpi_transport(boundary_comm_, device, true);
      backward = make_mpi_transport(boundary_comm_, device, true);
    }
    if (mine)
      links_.emplace(s, std::make_unique<StageLink>(boundary_comm_, s, layout_.stage_ranks(s), layout_.stage_ranks(s + 1),
                                                    std::move(forward), std::move(backward)));
  }
}

ProcessGroups::~ProcessGroups() {
  links_.clear();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && boundary_comm_ != MPI_COMM_NULL) MPI_Comm_free(&boundary_comm_);
}

bool ProcessGroups::holds(int stage) const {
  for (const StagePosition& position : positions_)
    if (position.stage == stage) return true;
  return false;
}

Communicator& ProcessGroups::stage(int stage) {
  const auto it = stages_.find(stage);
  LOOM_CHECK(it != stages_.end(), "rank ", world_rank(), " holds no replica of stage ", stage);
  return *it->second;
}

ReduceGroup& ProcessGroups::replicas(int stage) {
  const auto it = replicas_.find(stage);
  LOOM_CHECK(it != replicas_.end(), "rank ", world_rank(), " holds no replica of stage ", stage);
  return *it->second;
}

StageLink& ProcessGroups::link(int upstream_stage) {
  const auto it = links_.find(upstream_stage);
  LOOM_CHECK(it != links_.end(), "rank ", world_rank(), " is on neither side of the boundary after stage ", upstream_stage);
  return *it->second;
}

}  // namespace loom::comm
