// `loom profile` — not implemented yet (its issue fills this file).
#include <loom/core/error.h>

#include "commands.h"

namespace loom::apps {

void add_profile_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("profile", "(not implemented yet)");
  cmd->callback([] { LOOM_THROW("loom profile is not implemented yet"); });
}

}  // namespace loom::apps
