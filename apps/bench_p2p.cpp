// `loom bench p2p` — not implemented yet (its issue fills this file).
#include <loom/core/error.h>

#include "commands.h"

namespace loom::apps {

void add_bench_p2p_command(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("p2p", "(not implemented yet)");
  cmd->callback([] { LOOM_THROW("loom bench p2p is not implemented yet"); });
}

}  // namespace loom::apps
