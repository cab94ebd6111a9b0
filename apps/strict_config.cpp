// strict_config (see strict_config.h): CLI11's TOML reader, each key checked against the invoked subcommand.
#include "strict_config.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <loom/base/error.h>

namespace loom::apps {

namespace config_file {

// The subcommands of this invocation, outermost first: {train} or {bench, gemm}.
std::vector<CLI::App*> invoked_chain(CLI::App& root) {
  std::vector<CLI::App*> chain;
  for (CLI::App* app = &root;;) {
    CLI::App* next = nullptr;
    for (CLI::App* sub : app->get_subcommands())
      if (!sub->get_name().empty()) next = next ? next : sub;
    if (next == nullptr) return chain;
    chain.push_back(next);
    app = next;
  }
}

std::string dotted_path(const std::vector<CLI::App*>& chain) {
  std::string path;
  for (const CLI::App* app : chain) path += (path.empty() ? "" : ".") + app->get_name();
  return path;
}

// Where each section header and key is: the line of "[section]" (by section) and of the first
// "key = ..." (by "section.key", or "key" at the top level). The same reading rules as CLI11's
// ConfigBase::from_config (trimmed lines under 3 characters and '#'/';' comments skipped).
struct Lines {
  std::vector<std::pair<std::string, int>> sections;
  std::map<std::string, int> keys;
};

Lines locate(const std::string& text) {
  Lines lines;
  std::istringstream in(text);
  std::string section;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    CLI::detail::trim(line);
    if (line.size() < 3 || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      if (section.size() > 1 && section.front() == '[' && section.back() == ']') section = section.substr(1, section.size() - 2);
      if (CLI::detail::to_lower(section) == "default") section.clear();
      lines.sections.emplace_back(section, number);
      continue;
    }
    std::string name = CLI::detail::trim_copy(line.substr(0, std::min(line.find('='), line.find('#'))));
    if (name.find('.') == std::string::npos) CLI::detail::remove_quotes(name);
    lines.keys.emplace(section.empty() ? name : section + "." + name, number);
  }
  return lines;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

// The names a file may use in `app` (its options and its option groups', without dashes).
void key_names(CLI::App& app, std::vector<std::string>& names) {
  for (const CLI::Option* option : app.get_options())
    if (option->get_configurable()) {
      for (const std::string& name : option->get_lnames()) names.push_back(name);
      for (const std::string& name : option->get_snames()) names.push_back(name);
    }
  for (CLI::App* group : app.get_subcommands([](CLI::App* sub) { return sub->get_name().empty(); }))
    key_names(*group, names);
}

// The closest key within a third of the key's length (at least 1 edit), or "".
std::string nearest_key(const std::string& key, CLI::App& app) {
  std::vector<std::string> names;
  key_names(app, names);
  const std::size_t most = std::max<std::size_t>(1, key.size() / 3);
  std::string best;
  std::size_t best_distance = most + 1;
  for (const std::string& name : names)
    if (const std::size_t d = edit_distance(key, name); d < best_distance) best = name, best_distance = d;
  return best;
}

// " (did you mean 'steps'?)", or "".
std::string suggestion(const std::string& key, CLI::App& app) {
  const std::string best = nearest_key(key, app);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

// What is wrong with a value its option refused: "'abc' is not an integer", else CLI11's words
// ("--size: Value huge not in {paper,cpu,tiny}").
std::string value_problem(const CLI::Option& option, const CLI::ConfigItem& item, const CLI::ParseError& e) {
  const std::string value = "'" + excerpt(CLI::detail::join(item.inputs, ", ")) + "'";
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr && item.inputs.size() == 1) {
    const std::string type = option.get_type_name();
    if (option.get_expected_min() == 0) return value + " is not true or false";
    if (type.rfind("INT", 0) == 0) return value + " is not an integer";
    if (type.rfind("UINT", 0) == 0) return value + " is not a non-negative integer";
    if (type.rfind("FLOAT", 0) == 0) return value + " is not a number";
  }
  return excerpt(e.what(), 300);
}

CLI::Option* find_option(CLI::App& app, const std::string& name) {  // as CLI::App::_parse_single_config looks
  CLI::Option* option = app.get_option_no_throw("--" + name);
  if (option == nullptr && name.size() == 1) option = app.get_option_no_throw("-" + name);
  return option != nullptr ? option : app.get_option_no_throw(name);
}

}  // namespace config_file

namespace {

class StrictConfig : public CLI::ConfigTOML {
 public:
  explicit StrictConfig(CLI::App& root) : root_(root) {}

  // Applies the file to the invoked subcommand's options itself (so a refused value has its line)
  // and leaves nothing for CLI11 to apply.
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    const std::string text{std::istreambuf_iterator<char>(input), std::istreambuf_iterator<char>()};
    const std::string file = file_name();
    const std::vector<CLI::App*> chain = config_file::invoked_chain(root_);
    if (chain.empty()) return {};  // no subcommand: CLI11's "a subcommand is required" follows
    const std::string path = config_file::dotted_path(chain);
    const std::string reads = " (loom " + CLI::detail::join(CLI::detail::split(path, '.'), " ") +
                              " reads keys at the top of the file or in a [" + path + "] section)";
    const config_file::Lines lines = config_file::locate(text);
    for (const auto& [section, line] : lines.sections)
      LOOM_CHECK(section.empty() || section == path, file, ":", line, ": section [", excerpt(section),
                 "] is not a subcommand of this command", reads);
    std::istringstream in(text);
    for (const CLI::ConfigItem& item : CLI::ConfigTOML::from_config(in)) {
      if ((item.name == "++" || item.name == "--") && item.inputs.empty()) continue;  // section marks
      const auto at = lines.keys.find(item.fullname());
      const std::string where = file + (at == lines.keys.end() ? "" : ":" + std::to_string(at->second)) + ": ";
      LOOM_CHECK(item.parents.empty() || CLI::detail::join(item.parents, ".") == path, where, "unknown key '",
                 excerpt(item.fullname()), "'", reads);
      apply(item, *chain.back(), where);
    }
    return {};
  }

 private:
  void apply(const CLI::ConfigItem& item, CLI::App& app, const std::string& where) const {
    CLI::Option* option = config_file::find_option(app, item.name);
    LOOM_CHECK(option != nullptr, where, "unknown key '", excerpt(item.name), "'", config_file::suggestion(item.name, app));
    LOOM_CHECK(option->get_configurable(), where, "'", item.name, "' cannot be set in a config file");
    if (!option->empty()) return;  // given on the command line, which wins
    try {
      if (option->get_expected_min() == 0)  // a flag: "true", "false" or a count
        option->add_result(option->get_flag_value(item.name, to_flag(item)));
      else
        option->add_result(item.inputs);
      option->run_callback();
    } catch (const CLI::ParseError& e) {
      LOOM_THROW(where, item.name, ": ", config_file::value_problem(*option, item, e));
    }
  }

  // CLI11 reads the --config files last to first, one from_config each.
  std::string file_name() const {
    const auto files = root_.get_config_ptr()->as<std::vector<std::string>>();
    if (files.empty()) return "--config";
    return files[files.size() - 1 - files_read_++ % files.size()];
  }

  CLI::App& root_;
  mutable std::size_t files_read_ = 0;
};

}  // namespace

std::shared_ptr<CLI::Config> strict_config(CLI::App& root) { return std::make_shared<StrictConfig>(root); }

std::string unknown_flags_hint(CLI::App& root) {
  std::vector<CLI::App*> chain = config_file::invoked_chain(root);
  chain.insert(chain.begin(), &root);  // unknown flags fall through to the root
  CLI::App* command = chain.back();
  std::string hint;
  for (CLI::App* app : chain)
    for (const std::string& arg : app->remaining()) {
      if (arg.size() < 2 || arg[0] != '-') continue;
      const std::string key = arg.substr(arg.find_first_not_of('-'), arg.find('=') - arg.find_first_not_of('-'));
      if (const std::string best = config_file::nearest_key(key, *command); !best.empty())
        hint += std::string(hint.empty() ? " (" : ", ") + arg + ": did you mean --" + best + "?";
    }
  return hint.empty() ? hint : hint + ")";
}

}  // namespace loom::apps
