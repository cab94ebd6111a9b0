// One GPU reaches NCCL's gradient path (issue 33): a --device cuda run of the tiny mlp on one rank
// (one stage, one replica) with --reduce-backend nccl runs the gradient allreduce on NCCL over a
// group of one (no size-1 shortcut): the NCCL operation count grows with every step, and the losses
// equal the same run with --reduce-backend mpi, where nothing is reduced, bit for bit (a sum over
// one member is the value itself). gpu label: without a GPU, or in a build without CUDA, it says
// so and exits with 77 (skipped). Never run yet: no GPU has been lent.
#include <catch2/catch.hpp>

#include <loom/comm/mpi_session.h>
#ifdef LOOM_WITH_CUDA
#include <loom/comm/nccl_group.h>
#endif
#include <loom/runtime/trainer.h>

#include "skip_without_gpu.h"
#include "tiny_run.h"

using namespace loom;

TEST_CASE("Trainer --device cuda --reduce-backend nccl on one rank runs NCCL's allreduce", "[runtime][device][gpu]") {
  test::skip_without_gpu();
#ifdef LOOM_WITH_CUDA
  runtime::TrainerConfig config = test::tiny_run("mlp", "cuda", 1, 4);
  config.stages = 1;
  config.reduce_backend = "mpi";
  const std::vector<double> plain = runtime::Trainer(config).run().losses;
  config.reduce_backend = "nccl";
  const std::int64_t before = comm::nccl_operations();
  const std::vector<double> losses = runtime::Trainer(config).run().losses;
  CHECK(comm::nccl_operations() - before >= 4);  // at least one allreduce per step
  CHECK(losses == plain);
#endif
}
