// `--config FILE` read strictly: a CLI11 config formatter that stops at an unknown key, a bad value or a foreign
// section; and the same "did you mean" for an unknown flag on the command line.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

namespace loom::apps {

// The formatter for `root.config_formatter(...)` (root: the app that owns `set_config`). A file
// holds `key = value` lines (TOML, keys are the flag names without dashes, as `config_to_str`
// writes them), at the top level or in a section named after the subcommand being run
// ([train], [bench.gemm]); they go to that subcommand's options, and the command line wins over
// the file. Anything else throws loom::Error naming FILE:LINE: a key that is no option of the
// subcommand ("unknown key 'stepz' (did you mean 'steps'?)"), a value its option refuses ("steps:
// 'abc' is not an integer"), a section of another subcommand. Writing (to_config) is CLI11's TOML.
std::shared_ptr<CLI::Config> strict_config(CLI::App& root);

// After an ExtrasError from `root`'s parse: for each unknown flag the invoked command's closest
// option, as the config file's keys get (" (--stepz: did you mean --steps?)"), or "".
std::string unknown_flags_hint(CLI::App& root);

}  // namespace loom::apps
