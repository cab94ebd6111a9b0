// `loom train --config FILE`: the real CLI of `loom train` (main.cpp's --config with its strict
// reader, strict_config.h; the train command's options and checks) parsing a TOML file holding the
// input. The train command's callback, which would start training, is replaced by one that does
// nothing.
#include <CLI/CLI.hpp>

#include "commands.h"
#include "strict_config.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = loom::fuzz::write_scratch_file("options.toml", loom::fuzz::as_string(data, size));
  CLI::App app{"loom", "loom"};
  app.require_subcommand(1);
  app.config_formatter(loom::apps::strict_config(app));
  app.set_config("--config", "", "TOML options");
  loom::apps::add_train_command(app);
  app.get_subcommand("train")->callback([] {});
  const char* argv[] = {"loom", "train", "--config", path.c_str()};
  loom::fuzz::rejecting_loom_errors([&] {
    try {
      app.parse(4, argv);
    } catch (const CLI::ParseError&) {  // main() prints these as one line, like loom::Error
    }
  });
  return 0;
}
