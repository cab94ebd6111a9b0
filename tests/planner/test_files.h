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

// The published profiles in the repository: data/profiles (LOOM_PROFILES_DIR, tests/CMakeLists.txt).
inline std::string profiles_dir() { return LOOM_PROFILES_DIR; }

}  // namespace loom::planner::test
