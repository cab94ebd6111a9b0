// safetensors: round trips through loom and through plain-Python PyTorch, and clear errors for
// truncated, corrupted and malformed files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <loom/core/ops.h>
#include <loom/layers/safetensors.h>

#include "torch_reference.h"

using namespace loom;

namespace {

using test::temp_path;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors round trip keeps names, dtypes, shapes, values and metadata") {
  safetensors::NamedTensors tensors;
  tensors.emplace_back("a.weight", test::random_tensor(Shape{3, 4}, 1));
  tensors.emplace_back("b", test::random_tensor(Shape{5}, 2, -1, 1, DType::f64));
  tensors.emplace_back("ids", Tensor::from_vector<std::int64_t>({4, -1, 7}, Shape{3}));
  tensors.emplace_back("empty", Tensor::zeros(Shape{0, 2}));
  const std::string path = temp_path("roundtrip.safetensors");
  safetensors::save(path, tensors, {{"step", "12"}});
  auto file = safetensors::load(path);
  CHECK(file.metadata.at("step") == "12");
  REQUIRE(file.tensors.size() == 4);
  for (const auto& [name, t] : tensors) {
    const Tensor& u = file.get(name);
    CHECK(u.dtype() == t.dtype());
    CHECK(u.shape() == t.shape());
    CHECK(u.to_double_vector() == t.to_double_vector());
  }
}

TEST_CASE("PyTorch reads what loom writes and loom reads what PyTorch writes") {
  safetensors::NamedTensors tensors;
  tensors.emplace_back("x", test::random_tensor(Shape{2, 3, 4}, 3));
  tensors.emplace_back("ids", Tensor::from_vector<std::int64_t>({1, 2, 3}, Shape{3}));
  auto out = test::run_torch("echo", tensors);
  CHECK(out.get("x_times_two").to_double_vector() ==
        [&] { auto v = tensors[0].second.to_double_vector(); for (double& e : v) e *= 2; return v; }());
  CHECK(out.get("ids_plus_one").dtype() == DType::i64);
  CHECK(out.get("ids_plus_one").to_double_vector() == std::vector<double>{2, 3, 4});
}

TEST_CASE("malformed safetensors files give errors naming the file and the problem") {
  const std::string good = temp_path("good.safetensors");
  safetensors::save(good, {{"w", test::random_tensor(Shape{16, 16}, 4)}});
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  const std::string truncated = temp_path("truncated.safetensors");
  std::ofstream(truncated, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 100));
  std::string message = error_of([&] { safetensors::load(truncated); });
  CHECK(message.find(truncated) != std::string::npos);
  CHECK(message.find("truncated") != std::string::npos);
  CHECK(message.find("'w'") != std::string::npos);

  const std::string tiny = temp_path("tiny.safetensors");
  std::ofstream(tiny, std::ios::binary).write(bytes.data(), 5);
  CHECK(error_of([&] { safetensors::load(tiny); }).find("truncated") != std::string::npos);

  const std::string garbage = temp_path("garbage.safetensors");
  std::string broken = bytes;
  broken[8] = '#';  // the opening brace of the JSON header
  std::ofstream(garbage, std::ios::binary).write(broken.data(), static_cast<std::streamsize>(broken.size()));
  message = error_of([&] { safetensors::load(garbage); });
  CHECK(message.find("not valid JSON") != std::string::npos);

  CHECK(error_of([&] { safetensors::load(temp_path("missing.safetensors")); }).find("cannot open") != std::string::npos);
}

TEST_CASE("a safetensors header nested 100,000 levels deep is refused while parsing, naming the file") {
  // It used to parse, then overflow the stack (SIGSEGV) copying the value.
  const std::string header = R"({"__metadata__": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  const std::string path = temp_path("deep.safetensors");
  std::ofstream(path, std::ios::binary) << bytes << header;
  const std::string message = error_of([&] { safetensors::load(path); });
  CHECK(message.find(path + " header:1:") != std::string::npos);
  CHECK(message.find("JSON nested deeper than 512 levels") != std::string::npos);
}
