// The cached GEMM peak (see peak_cache.h).
#include "peak_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "version.h"

namespace loom::apps {

namespace fs = std::filesystem;

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

nlohmann::json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  const nlohmann::json cache = nlohmann::json::parse(in, nullptr, false);
  return cache.is_object() ? cache : nlohmann::json::object();
}

}  // namespace

std::string peak_cache_path() {
  for (const auto& [variable, below] : {std::pair{"LOOM_CACHE_DIR", ""}, {"XDG_CACHE_HOME", "loom"}, {"HOME", ".cache/loom"}}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return (fs::path(value) / below / "peak-gflops.json").string();
  }
  return "";
}

std::string peak_cache_key(DType operands, int threads) {
  std::ostringstream key;
  key << dtype_name(operands) << " GEMM 2048^3, " << threads << (threads == 1 ? " thread, " : " threads, ")
      << cpu_model() << ", " << version_text();
  return key.str();
}

std::optional<double> cached_peak(const std::string& path, const std::string& key) {
  if (path.empty()) return std::nullopt;
  const nlohmann::json cache = read_cache(path);
  const auto entry = cache.find(key);
  if (entry == cache.end() || !entry->is_object() || !entry->contains("gflops") || !(*entry)["gflops"].is_number())
    return std::nullopt;
  const double gflops = (*entry)["gflops"].get<double>();
  if (!(gflops > 0 && gflops < 1e9)) return std::nullopt;
  return gflops;
}

bool store_peak(const std::string& path, const std::string& key, double gflops) {
  if (path.empty()) return false;
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  nlohmann::json cache = read_cache(path);
  cache[key] = {{"gflops", gflops}};
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary);
    out << cache.dump(2) << "\n";
    if (!out.flush()) return false;
  }
  fs::rename(temporary, path, error);  // whole or not at all: a reader never sees half a file
  if (!error) return true;
  fs::remove(temporary, error);
  return false;
}

}  // namespace loom::apps
