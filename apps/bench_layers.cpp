// `loom bench layers` — not implemented yet (its issue fills this file).
#include <loom/core/error.h>

#include "commands.h"

namespace loom::apps {

void add_bench_layers_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("layers", "(not implemented yet)");
  cmd->callback([] { LOOM_THROW("loom bench layers is not implemented yet"); });
}

}  // namespace loom::apps
