// The Trainer's device choice (see device_setup.h).
#include "device_setup.h"

#include <loom/core/error.h>

namespace loom::runtime::detail {

void validate_reduce_backend(const std::string& text) {
  LOOM_CHECK(text == "auto" || text == "mpi" || text == "nccl", "--reduce-backend '", text,
             "': expected auto, mpi or nccl");
}

namespace {

// "stages 0, 2" for the stages whose backend is `backend`, "" if none.
std::string stages_on(const std::vector<comm::Backend>& backends, comm::Backend backend, const std::vector<bool>& reduce) {
  std::string text;
  for (std::size_t s = 0; s < backends.size(); ++s)
    if (reduce[s] && backends[s] == backend) text += loom::detail::concat(text.empty() ? "" : ", ", s);
  return text;
}

}  // namespace

ReducePlan plan_reduction(const std::string& choice, Device device, const comm::ParallelLayout& layout,
                          const comm::DevicePlacement& placement) {
  validate_reduce_backend(choice);
  LOOM_CHECK(choice != "nccl" || device.is_cuda(), "--reduce-backend nccl needs --device cuda (this run computes on ",
             device.str(), ")");
  ReducePlan plan;
  plan.backends.assign(static_cast<std::size_t>(layout.stages()), comm::Backend::mpi);
  if (device.is_cpu()) {
    plan.line = "device cpu: stage boundaries and the gradient allreduce move host memory over MPI";
    return plan;
  }
  std::vector<bool> reduce(plan.backends.size());
  std::string why_not;  // the first obstacle of a stage left on MPI
  for (int s = 0; s < layout.stages(); ++s) {
    reduce[static_cast<std::size_t>(s)] = layout.replicas(s) > 1;
    if (!device.is_cuda() || choice == "mpi" || layout.replicas(s) == 1) continue;
    const std::string obstacle = placement.nccl_obstacle(layout.stage_ranks(s));
    LOOM_CHECK(choice != "nccl" || obstacle.empty(), "--reduce-backend nccl: stage ", s, " cannot use NCCL: ", obstacle,
               " (NCCL puts at most one rank of a communicator on a GPU; use --reduce-backend auto or mpi)");
    if (obstacle.empty()) plan.backends[static_cast<std::size_t>(s)] = comm::Backend::nccl;
    if (!obstacle.empty() && why_not.empty()) why_not = obstacle;
  }
  const std::string staged = device.is_sim() ? "the sim device has no device-to-device transport"
                                             : "NCCL send/receive is not on the Trainer's path yet";
  const std::string on_nccl = stages_on(plan.backends, comm::Backend::nccl, reduce);
  const std::string on_mpi = stages_on(plan.backends, comm::Backend::mpi, reduce);
  const std::string mpi_because = device.is_sim() ? staged : choice == "mpi" ? "--reduce-backend mpi" : why_not;
  const std::string path = "host-staged over MPI (device -> host -> device), because ";
  if (on_nccl.empty() && mpi_because == staged) {
    plan.line = loom::detail::concat("device ", device.str(), ": stage boundaries and the gradient allreduce are ", path, staged);
    return plan;
  }
  plan.line = loom::detail::concat("device ", device.str(), ": stage boundaries are ", path, staged);
  if (!on_nccl.empty()) plan.line += "; the gradient allreduce of stage(s) " + on_nccl + " runs on NCCL";
  if (!on_mpi.empty()) plan.line += "; the gradient allreduce of stage(s) " + on_mpi + " is " + path + mpi_because;
  if (on_nccl.empty() && on_mpi.empty()) plan.line += "; no stage has replicas to reduce gradients with";
  return plan;
}

}  // namespace loom::runtime::detail
