// `loom bench allreduce` — not implemented yet (its issue fills this file).
#include <loom/core/error.h>

#include "commands.h"

namespace loom::apps {

void add_bench_allreduce_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("allreduce", "(not implemented yet)");
  cmd->callback([] { LOOM_THROW("loom bench allreduce is not implemented yet"); });
}

}  // namespace loom::apps
