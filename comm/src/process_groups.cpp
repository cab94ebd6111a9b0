#include <loom/comm/process_groups.h>

#include <loom/comm/runtime.h>
#include <loom/comm/watchdog.h>
#include <loom/core/error.h>

namespace loom::comm {

ProcessGroups::ProcessGroups(const ParallelLayout& layout, const Topology& topology, std::vector<Backend> reduce_backends,
                             Device device)
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

  {
    WatchdogScope watch("MPI_Comm_dup (stage links)");
    LOOM_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &boundary_comm_));
  }
  for (int s = 0; s + 1 < layout_.stages(); ++s)
    if (holds(s) || holds(s + 1))
      links_.emplace(s, std::make_unique<StageLink>(boundary_comm_, s, layout_.stage_ranks(s), layout_.stage_ranks(s + 1)));
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
