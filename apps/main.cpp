// loom: train, profile, plan, simulate, schedule, checkpoint, describe, models, bench. Errors end every rank with one clear line.
#include <cstdlib>
#include <exception>

#include <unistd.h>

#include <loom/comm/mpi_session.h>
#include <loom/core/log.h>

#include "commands.h"
#include "strict_config.h"
#include "version.h"

namespace {

// oneDNN (Conv2d's f32 CPU path) runs on OpenMP threads, which by default spin after each parallel
// region; spinning, they starve loom's own pool in the layers that follow and everything else on a
// shared machine (`loom bench layers`, 2 threads: a 3x3 stride-2 convolution 1.4x PyTorch's time
// with spinning threads, 0.8-1.0x passive). OpenMP reads OMP_WAIT_POLICY once, as its runtime
// loads before main, so when it is unset loom sets it to passive and executes itself again (before
// MPI starts; the process id stays). An explicit OMP_WAIT_POLICY is kept.
void prefer_passive_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  ::setenv("OMP_WAIT_POLICY", "passive", 1);
  ::execv("/proc/self/exe", argv);  // returns only if that failed: run on, with spinning threads
}

// `loom <command> ... --config FILE`: every command (bench's too) passes the options it does not
// know, --config among them, up to the app (strict_config.h reads the file for that command).
void let_commands_take_config(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands([](CLI::App* sub) { return !sub->get_name().empty(); })) {
    command->fallthrough();
    let_commands_take_config(*command);
  }
}

}  // namespace

int main(int argc, char** argv) {
  prefer_passive_openmp(argv);
  CLI::App app{"loom: pipelined and data-parallel training (DAPPLE, PipeDream)", "loom"};
  app.require_subcommand(1);
  app.set_version_flag("--version", loom::apps::version_text(), "Print loom's version (commit, build, backends, CPU ISA)");
  app.config_formatter(loom::apps::strict_config(app));  // unknown keys and bad values are errors with FILE:LINE
  app.set_config("--config", "", "read the command's options from a TOML file: `key = value` lines (the flag "
                 "names without dashes) at the top or in a section named after the command, e.g. [train], as loom "
                 "train writes next to --metrics (.options.toml); the command line wins over the file");
  loom::apps::add_train_command(app);
  loom::apps::add_profile_command(app);
  loom::apps::add_plan_command(app);
  loom::apps::add_simulate_command(app);
  loom::apps::add_schedule_command(app);
  loom::apps::add_checkpoint_command(app);
  loom::apps::add_describe_command(app);
  loom::apps::add_models_command(app);
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks: gemm, layers, optimizer, allreduce, p2p");
  bench->require_subcommand(1);
  loom::apps::add_bench_gemm_command(*bench);
  loom::apps::add_bench_layers_command(*bench);
  loom::apps::add_bench_optimizer_command(*bench);
  loom::apps::add_bench_allreduce_command(*bench);
  loom::apps::add_bench_p2p_command(*bench);
  let_commands_take_config(app);
  loom::log::init();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, loom's own: CLI11's words, and the nearest flag for an unknown one.
    std::string message = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) message += loom::apps::unknown_flags_hint(app);
    return loom::comm::end_with_error(message.c_str(), 2);
  } catch (const std::exception& e) {
    return loom::comm::end_with_error(e.what(), loom::comm::exit_status(e));
  }
  loom::comm::finalize_mpi();
  return 0;
}
