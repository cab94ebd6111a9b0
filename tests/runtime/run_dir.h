// A directory for one test's checkpoints under the build tree, emptied by rank 0 before any rank
// uses it (the runtime tests that write checkpoints).
#pragma once

#include <mpi.h>

#include <filesystem>
#include <string>

#include <loom/comm/mpi_session.h>

namespace loom::test {

inline std::string fresh_run_dir(const std::string& name) {
  const auto dir = std::filesystem::path(LOOM_BINARY_DIR) / "tests" / "runtime" / name;
  if (comm::world_rank() == 0) std::filesystem::remove_all(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir.string();
}

}  // namespace loom::test
