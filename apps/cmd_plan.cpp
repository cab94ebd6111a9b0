// `loom plan` — not implemented yet (its issue fills this file).
#include <loom/core/error.h>

#include "commands.h"

namespace loom::apps {

void add_plan_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("plan", "(not implemented yet)");
  cmd->callback([] { LOOM_THROW("loom plan is not implemented yet"); });
}

}  // namespace loom::apps
