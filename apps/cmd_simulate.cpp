// `loom simulate` — not implemented yet (its issue fills this file).
#include <loom/core/error.h>

#include "commands.h"

namespace loom::apps {

void add_simulate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("simulate", "(not implemented yet)");
  cmd->callback([] { LOOM_THROW("loom simulate is not implemented yet"); });
}

}  // namespace loom::apps
