// Pipelined training driven from a research user's own main() through the installed Trainer:
// run under `mpiexec -n 2`, 2 stages of a small MLP, 6 steps; rank 0 checks the losses are finite
// and falling, every rank that its stage holds its half of the blocks.
#include <cmath>
#include <cstdio>

#include <mpi.h>

#include <loom/comm/mpi_session.h>
#include <loom/runtime/trainer.h>

int main() {
  try {
    loom::runtime::TrainerConfig config;
    config.model = "mlp";
    config.overrides = "hidden=32,layers=4";
    config.stages = 2;
    config.microbatches = 4;
    config.global_batch = 32;
    config.steps = 6;
    config.lr = 0.1;
    config.lr_schedule = "constant";
    config.threads = 1;
    loom::runtime::Trainer trainer(config);
    std::vector<double> losses;
    loom::runtime::TrainerHooks hooks;
    hooks.on_step = [&](const loom::runtime::StepReport& r) { losses.push_back(r.loss); };
    trainer.run(hooks);
    bool ok = losses.size() == 6 && trainer.step() == 6 && trainer.chunks().size() == 1 &&
              trainer.chunks()[0]->size() == 2 && std::isfinite(losses.back()) && losses.back() < losses.front();
    if (loom::comm::world_rank() == 0)
      std::printf("consumer_trainer: %d ranks, stage %d, losses %.4f -> %.4f: %s\n", loom::comm::world_size(),
                  trainer.stage(), losses.front(), losses.back(), ok ? "ok" : "WRONG");
    int bad = ok ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_trainer: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
