// Helpers for planner tests: temporary input files and the published profiles directory.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace loom::planner::test {

// Writes `text` to a fresh file under the build tree and returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::path(LOOM_BINARY_DIR) / "tests" / "planner" / "inputs";
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// ../shared/profiles next to the repository, or $LOOM_PROFILES_DIR; empty when neither exists.
inline std::string profiles_dir() {
  if (const char* env = std::getenv("LOOM_PROFILES_DIR")) return env;
  const std::filesystem::path dir = std::filesystem::path(LOOM_SOURCE_DIR) / ".." / "shared" / "profiles";
  return std::filesystem::is_directory(dir) ? std::filesystem::canonical(dir).string() : std::string();
}

}  // namespace loom::planner::test
