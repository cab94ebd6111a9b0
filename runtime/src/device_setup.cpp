// The Trainer's device choice and communication plan (see device_setup.h).
#include "device_setup.h"

#include <algorithm>

#include <loom/base/error.h>

namespace loom::runtime::detail {

namespace {

constexpr const char* kStaged = "host-staged over MPI (device -> host -> device)";

// "0, 2": the indices whose entry is `value`, "" if none.
template <typename T>
std::string indices_of(const std::vector<T>& values, T value, const std::vector<bool>& counted) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (counted[i] && values[i] == value) text += loom::detail::concat(text.empty() ? "" : ", ", i);
  return text;
}

// Both sides are the same ranks: two chunks of one stage (a V's turn, interleaving on one stage).
bool is_local(const comm::ParallelLayout& layout, int boundary) {
  return layout.stage_ranks(boundary) == layout.stage_ranks(boundary + 1);
}

std::vector<int> both_sides(const comm::ParallelLayout& layout, int boundary) {
  std::vector<int> ranks = layout.stage_ranks(boundary);
  for (int r : layout.stage_ranks(boundary + 1))
    if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
  return ranks;
}

// "; boundaries 3 are local hand-overs ...", or the whole text when no other boundary exists.
std::string local_text(const std::vector<comm::BoundaryPath>& paths, bool alone) {
  const std::string local = indices_of(paths, comm::BoundaryPath::local, std::vector<bool>(paths.size(), true));
  if (local.empty()) return "";
  return loom::detail::concat(alone ? "" : "; ", "stage boundaries ", local,
                              " join chunks of the same ranks: handed over in memory");
}

// Each boundary whose two sides are the same ranks is local (no link); the others host-staged.
std::vector<comm::BoundaryPath> initial_paths(const comm::ParallelLayout& layout) {
  std::vector<comm::BoundaryPath> paths(static_cast<std::size_t>(std::max(layout.stages() - 1, 0)),
                                        comm::BoundaryPath::host_staged);
  for (std::size_t b = 0; b < paths.size(); ++b)
    if (is_local(layout, static_cast<int>(b))) paths[b] = comm::BoundaryPath::local;
  return paths;
}

// The boundaries' paths and their half of the line.
std::string plan_boundaries(BackendChoice choice, Device device, const comm::ParallelLayout& layout,
                            const comm::DevicePlacement& placement, std::vector<comm::BoundaryPath>& paths) {
  const int count = std::max(layout.stages() - 1, 0);
  if (count == 0) return "one stage, no stage boundaries";
  std::string why_not = choice == BackendChoice::mpi ? "--boundary-backend mpi" : "";  // the first obstacle
  for (int b = 0; b < count && choice != BackendChoice::mpi; ++b) {
    if (paths[static_cast<std::size_t>(b)] == comm::BoundaryPath::local) continue;
    const std::string obstacle = placement.direct_obstacle(both_sides(layout, b));
    LOOM_CHECK(choice != BackendChoice::nccl || obstacle.empty(), "--boundary-backend nccl: stage boundary ", b, " (stages ", b,
               " and ", b + 1, ") cannot use NCCL: ", obstacle,
               " (NCCL puts at most one rank of a communicator on a GPU; use --boundary-backend auto or mpi)");
    if (obstacle.empty()) paths[static_cast<std::size_t>(b)] = comm::BoundaryPath::device_direct;
    if (!obstacle.empty() && why_not.empty()) why_not = obstacle;
  }
  const std::vector<bool> all(paths.size(), true);
  const std::string direct = indices_of(paths, comm::BoundaryPath::device_direct, all);
  const std::string staged = indices_of(paths, comm::BoundaryPath::host_staged, all);
  const std::string on = device.is_cuda() ? "device to device on NCCL" : "device to device on NCCL's stand-in (MPI matched by order)";
  std::string line;
  if (staged.empty() && !direct.empty()) line = loom::detail::concat("stage boundaries go ", on);
  if (direct.empty() && !staged.empty()) line = loom::detail::concat("stage boundaries are ", kStaged, ", because ", why_not);
  if (!direct.empty() && !staged.empty())
    line = loom::detail::concat("stage boundaries ", direct, " go ", on, "; boundaries ", staged, " are ", kStaged,
                                ", because ", why_not);
  return line + local_text(paths, line.empty());
}

// Each stage's allreduce backend and its half of the line.
std::string plan_reduce(BackendChoice choice, Device device, const comm::ParallelLayout& layout,
                        const comm::DevicePlacement& placement, std::vector<comm::Backend>& backends) {
  backends.assign(static_cast<std::size_t>(layout.stages()), comm::Backend::mpi);
  std::vector<bool> reduce(backends.size());
  std::string why_not = device.is_sim() ? "the sim device has no device-to-device collectives"
                        : choice == BackendChoice::mpi ? "--reduce-backend mpi"
                                          : "";
  for (int s = 0; s < layout.stages(); ++s) {
    // An explicit --reduce-backend nccl reduces a stage of one replica too (NCCL over a group of one:
    // the one-GPU check that the NCCL path runs); auto leaves such a stage alone.
    const bool alone = layout.replicas(s) == 1;
    reduce[static_cast<std::size_t>(s)] = !alone || (choice == BackendChoice::nccl && device.is_cuda());
    if (!device.is_cuda() || choice == BackendChoice::mpi || (alone && choice != BackendChoice::nccl)) continue;
    const std::string obstacle = placement.direct_obstacle(layout.stage_ranks(s));
    LOOM_CHECK(choice != BackendChoice::nccl || obstacle.empty(), "--reduce-backend nccl: stage ", s, " cannot use NCCL: ", obstacle,
               " (NCCL puts at most one rank of a communicator on a GPU; use --reduce-backend auto or mpi)");
    if (obstacle.empty()) backends[static_cast<std::size_t>(s)] = comm::Backend::nccl;
    if (!obstacle.empty() && why_not.empty()) why_not = obstacle;
  }
  const std::string on_nccl = indices_of(backends, comm::Backend::nccl, reduce);
  const std::string on_mpi = indices_of(backends, comm::Backend::mpi, reduce);
  if (on_nccl.empty() && on_mpi.empty()) return "no stage has replicas to reduce gradients with";
  std::string text;
  if (!on_nccl.empty()) text = "the gradient allreduce of stage(s) " + on_nccl + " runs on NCCL";
  if (!on_mpi.empty())
    text += loom::detail::concat(text.empty() ? "" : "; ", "the gradient allreduce of stage(s) ", on_mpi, " is ", kStaged,
                                 ", because ", why_not);
  return text;
}

}  // namespace

CommPlan plan_communication(BackendChoice reduce_choice, BackendChoice boundary_choice, Device device,
                            const comm::ParallelLayout& layout, const comm::DevicePlacement& placement) {
  LOOM_CHECK(reduce_choice != BackendChoice::nccl || device.is_cuda(),
             "--reduce-backend nccl needs --device cuda (this run computes on ", device.str(), ")");
  LOOM_CHECK(boundary_choice != BackendChoice::nccl || device.is_cuda(),
             "--boundary-backend nccl needs --device cuda (this run computes on ", device.str(), ")");
  CommPlan plan;
  plan.boundaries = initial_paths(layout);
  if (device.is_cpu()) {
    plan.reduce.assign(static_cast<std::size_t>(layout.stages()), comm::Backend::mpi);
    plan.line = "device cpu: stage boundaries and the gradient allreduce move host memory over MPI" +
                local_text(plan.boundaries, false);
    return plan;
  }
  const std::string boundaries = plan_boundaries(boundary_choice, device, layout, placement, plan.boundaries);
  const std::string reduce = plan_reduce(reduce_choice, device, layout, placement, plan.reduce);
  plan.line = loom::detail::concat("device ", device.str(), ": ", boundaries, "; ", reduce);
  return plan;
}

}  // namespace loom::runtime::detail
