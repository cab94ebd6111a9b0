// PyTorch reference runner for the layer tests (see torch_reference.h).
#include "torch_reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <unistd.h>

#include <loom/base/error.h>
#include <loom/core/rng.h>

namespace loom::test {

namespace {

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace

safetensors::File run_torch(const std::string& script, const safetensors::NamedTensors& inputs,
                            const nlohmann::json& config) {
  const std::string python = LOOM_TORCH_PYTHON;
  LOOM_CHECK(!python.empty(), "no Python with torch was found at configure time (expected /usr/bin/python3 with "
                              "Debian's python3-torch)");
  static std::atomic<int> counter{0};
  const std::filesystem::path dir = std::filesystem::path(LOOM_BINARY_DIR) / "tests" / "layers" / "reference_data";
  std::filesystem::create_directories(dir);
  const std::string stem = script + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const std::string in_path = (dir / (stem + ".in.safetensors")).string();
  const std::string out_path = (dir / (stem + ".out.safetensors")).string();
  const std::string err_path = (dir / (stem + ".stderr")).string();
  const std::string script_path = std::string(LOOM_SOURCE_DIR) + "/tests/layers/reference/" + script + ".py";
  safetensors::save(in_path, inputs);
  std::filesystem::remove(out_path);
  const std::string command = shell_quote(python) + " " + shell_quote(script_path) + " " + shell_quote(in_path) + " " +
                              shell_quote(out_path) + " " + shell_quote(config.dump()) + " 2> " + shell_quote(err_path);
  const int status = std::system(command.c_str());
  if (status != 0) {
    std::ifstream err(err_path);
    std::stringstream text;
    text << err.rdbuf();
    LOOM_THROW("PyTorch reference ", script_path, " failed (status ", status, "):\n", text.str());
  }
  safetensors::File result = safetensors::load(out_path);
  std::filesystem::remove(in_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return result;
}

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::path(LOOM_BINARY_DIR) / "tests" / "layers" / "tmp";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

double relative_error(const Tensor& a, const Tensor& b) {
  LOOM_CHECK(a.shape() == b.shape(), "relative_error: shapes ", a.shape().str(), " and ", b.shape().str(), " differ");
  const std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) return std::numeric_limits<double>::infinity();
    diff = std::max(diff, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

double largest_magnitude(const Tensor& t) {
  double largest = 0.0;
  for (const double v : t.to_double_vector()) largest = std::max(largest, std::abs(v));
  return largest;
}

Tensor random_tensor(const Shape& shape, std::uint64_t key, double lo, double hi, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  rng::uniform(t, 4242, key, lo, hi);
  return t;
}

}  // namespace loom::test
