// Subcommands of the `loom` executable. Each lives in its own file and registers itself on the
// CLI11 app; `main` catches loom::Error, prints one line and aborts every rank.
#pragma once

#include <CLI/CLI.hpp>

#include <loom/schedule/generators.h>

namespace loom::apps {

void add_train_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_schedule_command(CLI::App& app);  // `loom schedule list|export`
// The sizes a schedule generator takes (--stages, --microbatches, --chunks, --minibatches, --warmup),
// for `loom simulate` and `loom schedule export` (cmd_simulate.cpp).
void add_schedule_size_options(CLI::App& cmd, schedule::ScheduleOptions& options);
void add_checkpoint_command(CLI::App& app);  // `loom checkpoint inspect|export`
void add_describe_command(CLI::App& app);  // also defines `loom models`
void add_models_command(CLI::App& app);
// `loom bench <name>`: gemm, layers, optimizer, allreduce, p2p.
void add_bench_gemm_command(CLI::App& bench);
void add_bench_layers_command(CLI::App& bench);
void add_bench_optimizer_command(CLI::App& bench);
void add_bench_allreduce_command(CLI::App& bench);
void add_bench_p2p_command(CLI::App& bench);

}  // namespace loom::apps
