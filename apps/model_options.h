// The model flags that train, profile and describe share: --model, --size, --set, with the
// presets and their settings at every size in the command's --help.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace loom::apps {

void add_model_options(CLI::App* cmd, std::string& model, std::string& size, std::string& overrides);

}  // namespace loom::apps
