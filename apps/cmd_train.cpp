// `loom train` — not implemented yet (its issue fills this file).
#include <loom/core/error.h>

#include "commands.h"

namespace loom::apps {

void add_train_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("train", "(not implemented yet)");
  cmd->callback([] { LOOM_THROW("loom train is not implemented yet"); });
}

}  // namespace loom::apps
