// Checkpoints: resume gives bit-identical training, and damaged or mismatched files give errors
// naming the file, the layer, the parameter and both shapes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <loom/core/ops.h>
#include <loom/layers/chain.h>
#include <loom/layers/checkpoint.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/transformer.h>

#include "torch_reference.h"

using namespace loom;

namespace {

using test::temp_path;

Chain make_model(std::int64_t d_ff) {
  TransformerOptions o;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = d_ff;
  o.dropout = 0.1;
  Chain chain;
  chain.add(std::make_unique<TransformerEncoderLayer>(o), "blocks.0");
  chain.add(std::make_unique<Linear>(8, 1), "head");
  chain.initialize(21);
  return chain;
}

void train_step(Chain& model, Adam& optimizer, std::int64_t step) {
  Tensor x = test::random_tensor(Shape{4, 3, 8}, 100 + static_cast<std::uint64_t>(step));
  Tensor target = test::random_tensor(Shape{4, 3, 1}, 200 + static_cast<std::uint64_t>(step));
  MSELoss loss;
  Context ctx, loss_ctx;
  ctx.step = static_cast<std::uint64_t>(step);
  optimizer.zero_grad();
  Tensor y = model.forward({x}, ctx)[0];
  loss.forward({y, target}, loss_ctx);
  Tensor g = loss.backward({Tensor::full(Shape{}, 1.0)}, loss_ctx)[0];
  model.backward({g}, ctx);
  optimizer.step(1e-2);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("resuming from a checkpoint continues training bit for bit") {
  Chain a = make_model(12);
  Adam adam_a(a.parameters(), AdamOptions{});
  for (std::int64_t s = 0; s < 3; ++s) train_step(a, adam_a, s);
  const std::string path = temp_path("resume.safetensors");
  save_checkpoint(path, a, &adam_a, {{"run", "test"}});
  for (std::int64_t s = 3; s < 5; ++s) train_step(a, adam_a, s);

  Chain b = make_model(12);
  b.initialize(99);  // different starting values: the checkpoint must overwrite them all
  Adam adam_b(b.parameters(), AdamOptions{});
  auto metadata = load_checkpoint(path, b, &adam_b);
  CHECK(metadata.at("run") == "test");
  CHECK(adam_b.steps() == 3);
  for (std::int64_t s = 3; s < 5; ++s) train_step(b, adam_b, s);
  auto pa = a.parameters(), pb = b.parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].name);
    CHECK(ops::max_abs_error(pa[i].parameter->value, pb[i].parameter->value) == 0.0);
  }
}

TEST_CASE("a checkpoint is readable by PyTorch users: plain safetensors with parameter names") {
  Chain a = make_model(12);
  const std::string path = temp_path("plain.safetensors");
  save_checkpoint(path, a, nullptr, {{"run", "plain"}});
  // Read with plain Python + torch (reference/checkpoint.py), not loom's reader; what loom holds
  // goes there as JSON text, so a fault in loom's safetensors code cannot cancel itself out.
  safetensors::NamedTensors held;
  nlohmann::json tensors = nlohmann::json::object(), each = nlohmann::json::object();
  for (const NamedParameter& p : a.parameters()) {
    const Tensor& value = p.parameter->value;
    REQUIRE(value.dtype() == DType::f32);
    tensors[p.name] = {{"dtype", "float32"}, {"shape", value.shape().vec()}, {"values", value.to_double_vector()}};
    each[p.name] = tensor_checksum(p.name, value);
    held.emplace_back(p.name, value);
  }
  REQUIRE(tensors.contains("blocks.0.self_attn.qkv.weight"));
  REQUIRE(tensors.at("head.weight").at("shape") == nlohmann::json{1, 8});
  const nlohmann::json config = {
      {"path", path},
      {"tensors", tensors},
      {"metadata",
       {{"loom.format", "loom-checkpoint/1"}, {"loom.checksum", checkpoint_checksum(held)}, {"run", "plain"}}},
      {"tensor_checksums", each}};
  const safetensors::File torch = test::run_torch("checkpoint", {}, config);  // throws with every difference
  CHECK(torch.get("tensors_checked").to_double_vector() == std::vector<double>{static_cast<double>(held.size())});
}

TEST_CASE("damaged and mismatched checkpoints give clear errors") {
  Chain a = make_model(12);
  Adam adam(a.parameters(), AdamOptions{});
  const std::string path = temp_path("good.safetensors");
  save_checkpoint(path, a, &adam);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  SECTION("an optimizer step count out of range (issue 15: -1 resumed Adam into NaN)") {
    for (int i = 0; i < 10; ++i) adam.step(1e-3);
    const std::string counted = temp_path("counted.safetensors");
    save_checkpoint(counted, a, &adam);
    std::ifstream file(counted, std::ios::binary);
    std::string damaged((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const std::string key = "\"loom.optimizer.steps\":\"10\"";
    const auto at = damaged.find(key);
    REQUIRE(at != std::string::npos);
    damaged.replace(at, key.size(), "\"loom.optimizer.steps\":\"-1\"");  // same length: the header stays valid
    const std::string p = temp_path("negative_steps.safetensors");
    std::ofstream(p, std::ios::binary).write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
    const std::string m = error_of([&] { load_checkpoint(p, a, &adam); });
    CHECK(m.find(p) != std::string::npos);
    CHECK(m.find("loom.optimizer.steps must be an integer in [0, 2^40], not '-1'") != std::string::npos);
  }
  SECTION("corrupted data") {
    std::string damaged = bytes;
    damaged[damaged.size() - 7] ^= 0x10;
    const std::string p = temp_path("corrupted.safetensors");
    std::ofstream(p, std::ios::binary).write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
    const std::string m = error_of([&] { load_checkpoint(p, a); });
    CHECK(m.find(p) != std::string::npos);
    CHECK(m.find("corrupted") != std::string::npos);
  }
  SECTION("truncated file") {
    const std::string p = temp_path("truncated.safetensors");
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    const std::string m = error_of([&] { load_checkpoint(p, a); });
    CHECK(m.find(p) != std::string::npos);
    CHECK(m.find("truncated") != std::string::npos);
  }
  SECTION("different architecture: layer, parameter and both shapes") {
    Chain other = make_model(16);
    const std::string m = error_of([&] { load_checkpoint(path, other); });
    INFO(m);
    CHECK(m.find(path) != std::string::npos);
    CHECK(m.find("parameter 'blocks.0.linear1.weight' of layer 'blocks.0.linear1'") != std::string::npos);
    CHECK(m.find("[16, 8] in the model but [12, 8] in the file") != std::string::npos);
  }
  SECTION("a model with fewer parameters than the file") {
    Chain head_only;
    head_only.add(std::make_unique<Linear>(8, 1), "head");
    head_only.initialize(1);
    CHECK(error_of([&] { load_checkpoint(path, head_only); }).find("that the model does not have") != std::string::npos);
  }
  SECTION("asking for optimizer state the file does not hold") {
    const std::string p = temp_path("no_optimizer.safetensors");
    save_checkpoint(p, a);
    CHECK(error_of([&] { load_checkpoint(p, a, &adam); }).find("no optimizer state") != std::string::npos);
    Sgd sgd(a.parameters(), SgdOptions{0.9});
    CHECK(error_of([&] { load_checkpoint(path, a, &sgd); }).find("holds Adam state") != std::string::npos);
  }
}
