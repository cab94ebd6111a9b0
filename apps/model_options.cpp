// --model, --size and --set (see model_options.h).
#include "model_options.h"

#include <loom/models/model.h>

namespace loom::apps {

void add_model_options(CLI::App* cmd, std::string& model, std::string& size, std::string& overrides) {
  std::string names;
  for (const std::string& n : model_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--model", model, "model preset: " + names + " (`loom models`; their settings: `loom describe --settings`)")
      ->capture_default_str();  // an unknown name is make_model's error, which lists the presets
  cmd->add_option("--size", size,
                  "preset size: paper (the published model), cpu (trains in minutes on 2 cores) or tiny (tests)")
      ->capture_default_str()
      ->check(CLI::IsMember({"paper", "cpu", "tiny"}));
  cmd->add_option("--set", overrides, "preset setting overrides on top of --size, e.g. hidden=512,layers=8");
  cmd->footer("The presets' settings for --set: loom describe --settings");
}

}  // namespace loom::apps
