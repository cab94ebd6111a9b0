// Layers on the sim device (core/device.h): a transformer block and a head moved to the sim device
// train with Adam exactly as on the CPU (the same kernels, so bit for bit), with their parameters,
// gradients, optimizer state and activations on the sim device's ledger and none on the host's;
// a checkpoint written from the sim device is byte for byte the CPU's and loads back onto it; the
// file code itself takes host tensors only.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <loom/core/memory.h>
#include <loom/layers/chain.h>
#include <loom/layers/checkpoint.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/transformer.h>

#include "torch_reference.h"

using namespace loom;

namespace {

using test::temp_path;

Chain make_model(Device device) {
  TransformerOptions o;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = 16;
  o.dropout = 0.1;
  Chain chain;
  chain.add(std::make_unique<TransformerEncoderLayer>(o), "blocks.0");
  chain.add(std::make_unique<Linear>(8, 1), "head");
  chain.initialize(21);
  chain.to(device);
  return chain;
}

// One step; the batch is read on the host and copied to the model's device, as the runtime does.
double train_step(Chain& model, Adam& optimizer, std::int64_t step, Device device) {
  const Tensor x = test::random_tensor(Shape{4, 3, 8}, 100 + static_cast<std::uint64_t>(step)).to(device);
  const Tensor target = test::random_tensor(Shape{4, 3, 1}, 200 + static_cast<std::uint64_t>(step)).to(device);
  MSELoss loss;
  Context ctx, loss_ctx;
  ctx.step = static_cast<std::uint64_t>(step);
  optimizer.zero_grad();
  Tensor y;
  {
    MemoryCategoryScope activations(MemoryCategory::activations);
    y = model.forward({x}, ctx)[0];
  }
  const double value = loss.forward({y, target}, loss_ctx)[0].item();
  Tensor g = loss.backward({Tensor::full(Shape{}, 1.0, DType::f32, device)}, loss_ctx)[0];
  model.backward({g}, ctx);
  optimizer.step(1e-2);
  return value;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("sim device: layers train like the CPU, bit for bit, on their own ledger", "[layers][device][sim]") {
  const Device sim = Device::sim();
  Chain cpu_model = make_model(Device::cpu());
  Adam cpu_adam(cpu_model.parameters(), AdamOptions{});
  std::vector<double> cpu_losses;
  for (std::int64_t s = 0; s < 3; ++s) cpu_losses.push_back(train_step(cpu_model, cpu_adam, s, Device::cpu()));

  const MemoryStats host_before = memory_stats(Device::cpu());
  reset_peak_memory(sim);
  Chain sim_model = make_model(sim);
  Adam sim_adam(sim_model.parameters(), AdamOptions{});
  reset_peak_memory(Device::cpu());
  std::vector<double> sim_losses;
  for (std::int64_t s = 0; s < 3; ++s) sim_losses.push_back(train_step(sim_model, sim_adam, s, sim));
  CHECK(sim_losses == cpu_losses);
  auto pc = cpu_model.parameters(), ps = sim_model.parameters();
  REQUIRE(pc.size() == ps.size());
  for (std::size_t i = 0; i < pc.size(); ++i) {
    INFO(pc[i].name);
    CHECK(ps[i].parameter->value.device() == sim);
    CHECK(ps[i].parameter->value.to_float_vector() == pc[i].parameter->value.to_float_vector());
  }

  const MemoryStats on_sim = memory_stats(sim), on_host = memory_stats(Device::cpu());
  CHECK(on_sim.live(MemoryCategory::parameters) == static_cast<std::int64_t>(sim_model.parameter_bytes()));
  CHECK(on_sim.live(MemoryCategory::gradients) > 0);
  CHECK(on_sim.live(MemoryCategory::optimizer_state) == 2 * on_sim.live(MemoryCategory::gradients));
  CHECK(on_sim.peak(MemoryCategory::activations) > 0);
  for (MemoryCategory c : {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_state}) {
    INFO(memory_category_name(c));
    CHECK(on_host.live(c) == host_before.live(c));
  }
  CHECK(on_host.peak(MemoryCategory::activations) == host_before.live(MemoryCategory::activations));
}

TEST_CASE("sim device: checkpoints stage through the host and equal the CPU's", "[layers][device][sim]") {
  const Device sim = Device::sim();
  Chain cpu_model = make_model(Device::cpu()), sim_model = make_model(sim);
  Adam cpu_adam(cpu_model.parameters(), AdamOptions{}), sim_adam(sim_model.parameters(), AdamOptions{});
  for (std::int64_t s = 0; s < 2; ++s) {
    train_step(cpu_model, cpu_adam, s, Device::cpu());
    train_step(sim_model, sim_adam, s, sim);
  }
  const std::string cpu_path = temp_path("device_cpu.safetensors"), sim_path = temp_path("device_sim.safetensors");
  save_checkpoint(cpu_path, cpu_model, &cpu_adam);
  save_checkpoint(sim_path, sim_model, &sim_adam);
  CHECK(file_bytes(sim_path) == file_bytes(cpu_path));

  Chain resumed = make_model(sim);
  resumed.initialize(99);
  resumed.to(sim);
  Adam resumed_adam(resumed.parameters(), AdamOptions{});
  load_checkpoint(sim_path, resumed, &resumed_adam);
  CHECK(resumed_adam.steps() == 2);
  const double continued = train_step(sim_model, sim_adam, 2, sim);
  CHECK(train_step(resumed, resumed_adam, 2, sim) == continued);
  CHECK(train_step(cpu_model, cpu_adam, 2, Device::cpu()) == continued);
  for (auto& p : resumed.parameters()) CHECK(p.parameter->value.device() == sim);

  // The file code takes host tensors only: a sim tensor is an error naming the call and the device.
  const safetensors::NamedTensors on_device = {{"w", sim_model.parameters()[0].parameter->value}};
  CHECK_THROWS_WITH(safetensors::save(temp_path("device_raw.safetensors"), on_device),
                    Catch::Contains("safetensors::save of 'w'") && Catch::Contains("sim:0") &&
                        Catch::Contains("not in host memory"));
  CHECK_THROWS_WITH(checkpoint_checksum(on_device), Catch::Contains("checkpoint_checksum") && Catch::Contains("sim:0"));
  CHECK(!std::filesystem::exists(temp_path("device_raw.safetensors")));
}
