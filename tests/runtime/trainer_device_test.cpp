// The Trainer on the sim device (core/device.h), under mpiexec -n 4: 2 stages x 2 replicas of the
// tiny mlp and gpt presets train with Adam on `sim` exactly as on `cpu` (the same CPU kernels, so
// the losses agree bit for bit), which proves that every host/device transfer the runtime needs is
// staged: batches to the device, boundary tensors device -> host -> device over MPI, the gradient
// allreduce through host buckets, checkpoints to the host and back. The ledgers show where the
// tensors live: parameters, gradients, optimizer state and activations on the sim device, with the
// CPU run's per-category peaks (activations: at most those), and none of them on the host. A checkpoint written from
// the sim device is byte for byte the CPU's, and resuming from it on the sim device continues the
// CPU's curve. --device cuda without a GPU is one clear error. What each stage's gradient
// allreduce runs on (NCCL where every replica has a GPU of its own, else host-staged MPI) is
// decided from the device placement alone, so it is checked here for GPU layouts too.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <mpi.h>

#include <loom/comm/process_groups.h>
#include <loom/comm/mpi_session.h>
#include <loom/core/memory.h>
#include <loom/runtime/trainer.h>

#include "compare_runs.h"
#include "device_setup.h"  // runtime/src: the communication plan
#include "run_dir.h"
#include "tiny_run.h"

using namespace loom;

namespace {

runtime::TrainerConfig config_for(const std::string& model, const std::string& device) {
  runtime::TrainerConfig c = test::tiny_run(model, device, 2, 3);
  c.bucket_mb = 0.001;  // several buckets per stage
  return c;
}

struct Run {
  std::vector<double> losses;
  test::Weights weights;         // this rank's final parameters, by name
  runtime::MemoryPeaks peaks{};  // of the last step (the maximum over ranks)
  MemoryStats host, device;      // this rank's ledgers after the run
  std::int64_t parameter_bytes = 0;
};

test::Weights final_weights(const runtime::Trainer& trainer) {
  test::Weights weights;
  for (Chain* chunk : trainer.chunks())
    for (const NamedParameter& p : chunk->parameters()) weights[p.name] = p.parameter->value.to_double_vector();
  return weights;
}

Run train(const runtime::TrainerConfig& config) {
  runtime::Trainer trainer(config);
  Run run;
  runtime::TrainerHooks hooks;
  hooks.on_step = [&](const runtime::StepReport& r) { run.peaks = r.peaks; };
  run.losses = trainer.run(hooks).losses;
  CHECK(trainer.device() == Device::parse(config.device));
  run.host = memory_stats(Device::cpu());
  run.device = memory_stats(trainer.device());
  for (Chain* chunk : trainer.chunks()) run.parameter_bytes += static_cast<std::int64_t>(chunk->parameter_bytes());
  run.weights = final_weights(trainer);
  return run;
}

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("Trainer on the sim device equals the CPU run, with its tensors on the device", "[runtime][device][sim][mpi]") {
  REQUIRE(comm::world_size() == 4);
  for (const std::string model : {"mlp", "gpt"}) {
    INFO("model " << model);
    const Run cpu = train(config_for(model, "cpu"));
    const Run sim = train(config_for(model, "sim"));
    REQUIRE(sim.losses.size() == 3);
    test::check_losses(sim.losses, cpu.losses, 0);
    test::check_final_weights(sim.weights, cpu.weights, 0);
    for (MemoryCategory c : {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_state,
                             MemoryCategory::activations}) {
      INFO(memory_category_name(c));
      const auto i = static_cast<std::size_t>(c);
      // The device's ledger is exact as the host's. Activations peak lower on the device: a CPU
      // send keeps the output tensor itself until MPI is done with it, a host-staged send only
      // its host copy (charged to communication), so the device frees it right away.
      if (c == MemoryCategory::activations)
        CHECK(sim.peaks[i] <= cpu.peaks[i]);
      else
        CHECK(sim.peaks[i] == cpu.peaks[i]);
      CHECK(sim.peaks[i] > 0);
      CHECK(sim.host.peak(c) == 0);  // and the host held none of it during the run
      CHECK(sim.host.live(c) == 0);
    }
    CHECK(sim.device.live(MemoryCategory::parameters) == sim.parameter_bytes);
    CHECK(sim.device.peak(MemoryCategory::activations) > 0);
    CHECK(sim.host.peak(MemoryCategory::communication) > 0);  // the host only stages
  }
}

TEST_CASE("Trainer on the sim device: checkpoints equal the CPU's and resume its curve", "[runtime][device][sim][mpi]") {
  const std::string cpu_dir = test::fresh_run_dir("device_ckpt_cpu"), sim_dir = test::fresh_run_dir("device_ckpt_sim");
  runtime::TrainerConfig cpu = config_for("gpt", "cpu"), sim = config_for("gpt", "sim");
  cpu.checkpoint = cpu_dir;
  sim.checkpoint = sim_dir;
  train(cpu);
  train(sim);
  MPI_Barrier(MPI_COMM_WORLD);
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cpu_dir)) {
    if (entry.path().extension() != ".safetensors") continue;
    const auto twin = std::filesystem::path(sim_dir) / std::filesystem::relative(entry.path(), cpu_dir);
    INFO(twin.string());
    CHECK(file_bytes(twin) == file_bytes(entry.path()));
    ++files;
  }
  CHECK(files == 2);  // one per stage

  runtime::TrainerConfig longer_cpu = config_for("gpt", "cpu"), resumed = config_for("gpt", "sim");
  longer_cpu.steps = resumed.steps = 5;
  resumed.resume = sim_dir;
  const Run reference = train(longer_cpu);
  const Run rest = train(resumed);
  REQUIRE(rest.losses.size() == 2);
  CHECK(rest.losses[0] == reference.losses[3]);
  CHECK(rest.losses[1] == reference.losses[4]);
  test::check_final_weights(rest.weights, reference.weights, 0);
}

TEST_CASE("Trainer --device errors", "[runtime][device][mpi]") {
  CHECK_THROWS_WITH(runtime::Trainer(config_for("mlp", "tpu")), Catch::Contains("--device 'tpu'"));
  if (cuda_device_count() == 0) {
    const std::string why = cuda_compiled() ? "no CUDA device is visible" : "this build of loom has no CUDA backend";
    CHECK_THROWS_WITH(runtime::Trainer(config_for("mlp", "cuda")), Catch::Contains("--device cuda: " + why));
    CHECK_THROWS_WITH(runtime::Trainer(config_for("mlp", "cuda:1")), Catch::Contains("--device cuda:1: " + why));
  } else {
    const std::string past = "cuda:" + std::to_string(cuda_device_count());
    CHECK_THROWS_WITH(runtime::Trainer(config_for("mlp", past)), Catch::Contains("CUDA device"));
  }
}

TEST_CASE("Trainer: each stage's gradient allreduce on NCCL or host-staged MPI", "[runtime][device]") {
  using comm::Backend;
  // 2 stages x 2 replicas on 2 nodes of 2 GPUs: stage 0 = ranks {0, 2}, stage 1 = {1, 3}.
  const comm::ParallelLayout layout = comm::ParallelLayout::from_table({{0, 2}, {1, 3}});
  const comm::DevicePlacement own({0, 0, 1, 1}, {Device::cuda(0), Device::cuda(1), Device::cuda(0), Device::cuda(1)});
  auto plan = runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::cuda(0), layout, own);
  CHECK(plan.reduce == std::vector<Backend>{Backend::nccl, Backend::nccl});
  CHECK_THAT(plan.line, Catch::Contains("the gradient allreduce of stage(s) 0, 1 runs on NCCL"));
  CHECK(runtime::detail::plan_communication(runtime::BackendChoice::mpi, runtime::BackendChoice::automatic, Device::cuda(0), layout, own).reduce ==
        std::vector<Backend>{Backend::mpi, Backend::mpi});

  // One node, one GPU per two ranks: stage 0's replicas {0, 1} share cuda:0, stage 1's {2, 3} do not.
  const comm::ParallelLayout one_node = comm::ParallelLayout::from_table({{0, 1}, {2, 3}});
  const comm::DevicePlacement shared({0, 0, 0, 0}, {Device::cuda(0), Device::cuda(0), Device::cuda(0), Device::cuda(1)});
  plan = runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::cuda(0), one_node, shared);
  CHECK(plan.reduce == std::vector<Backend>{Backend::mpi, Backend::nccl});
  CHECK_THAT(plan.line, Catch::Contains("stage(s) 1 runs on NCCL") &&
                            Catch::Contains("stage(s) 0 is host-staged over MPI (device -> host -> device), because ranks 0 "
                                                            "and 1 share cuda:0 of node 0"));
  CHECK_THROWS_WITH(runtime::detail::plan_communication(runtime::BackendChoice::nccl, runtime::BackendChoice::automatic, Device::cuda(0), one_node, shared),
                    Catch::Contains("--reduce-backend nccl: stage 0 cannot use NCCL: ranks 0 and 1 share cuda:0"));

  // A stage of one replica reduces nothing: no NCCL communicator for it.
  const comm::ParallelLayout alone = comm::ParallelLayout::from_table({{0}, {1}});
  plan = runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::cuda(0), alone, own);
  CHECK(plan.reduce == std::vector<Backend>{Backend::mpi, Backend::mpi});
  CHECK_THAT(plan.line, Catch::Contains("no stage has replicas"));
  // ... unless NCCL is asked for: a group of one then runs NCCL's allreduce (the one-GPU check).
  plan = runtime::detail::plan_communication(runtime::BackendChoice::nccl, runtime::BackendChoice::automatic, Device::cuda(0), alone, own);
  CHECK(plan.reduce == std::vector<Backend>{Backend::nccl, Backend::nccl});
  CHECK_THAT(plan.line, Catch::Contains("the gradient allreduce of stage(s) 0, 1 runs on NCCL"));

  // Off CUDA: MPI, and nccl is refused.
  const comm::DevicePlacement sim({0, 0, 0, 0}, std::vector<Device>(4, Device::sim()));
  plan = runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::sim(), layout, sim);
  CHECK(plan.reduce == std::vector<Backend>{Backend::mpi, Backend::mpi});
  CHECK_THAT(plan.line, Catch::Equals("device sim:0: stage boundaries are host-staged over MPI (device -> host -> "
                                      "device), because ranks 0 and 2 share sim:0 of node 0; the gradient allreduce of "
                                      "stage(s) 0, 1 is host-staged over MPI (device -> host -> device), because the sim "
                                      "device has no device-to-device collectives"));
  CHECK_THROWS_WITH(runtime::detail::plan_communication(runtime::BackendChoice::nccl, runtime::BackendChoice::automatic, Device::cpu(), layout, sim),
                    Catch::Contains("--reduce-backend nccl needs --device cuda"));
  runtime::TrainerConfig bad = config_for("mlp", "cpu");
  bad.reduce_backend = "gloo";
  CHECK_THROWS_WITH(runtime::Trainer(bad), Catch::Contains("--reduce-backend 'gloo': expected auto, mpi or nccl"));
  bad = config_for("mlp", "cpu");
  bad.boundary_backend = "tcp";
  CHECK_THROWS_WITH(runtime::Trainer(bad), Catch::Contains("--boundary-backend 'tcp': expected auto, mpi or nccl"));
}

// Interleaving on one stage (two chunks of the same ranks) on cuda: the boundary between the chunks
// is a local hand-over, never an NCCL send to itself, even with --boundary-backend nccl (issue 33).
TEST_CASE("Trainer: a stage boundary to the same ranks is local, not NCCL", "[runtime][device]") {
  const comm::ParallelLayout chunks = comm::ParallelLayout::from_table({{0}, {0}, {1}});
  const comm::DevicePlacement own({0, 0}, {Device::cuda(0), Device::cuda(1)});
  const auto plan = runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::nccl,
                                                        Device::cuda(0), chunks, own);
  CHECK(plan.boundaries == std::vector<comm::BoundaryPath>{comm::BoundaryPath::local, comm::BoundaryPath::device_direct});
  CHECK_THAT(plan.line, Catch::Contains("stage boundaries 0 join chunks of the same ranks: handed over in memory"));
}

TEST_CASE("Trainer: each stage boundary device to device on NCCL or host-staged MPI", "[runtime][device]") {
  using comm::BoundaryPath;
  const auto direct = BoundaryPath::device_direct, staged = BoundaryPath::host_staged;
  // 3 stages on one node of 4 GPUs, stage 1 replicated: {0}, {1, 2}, {3} (every rank its own GPU).
  const comm::ParallelLayout three = comm::ParallelLayout::from_table({{0}, {1, 2}, {3}});
  const comm::DevicePlacement own({0, 0, 0, 0}, {Device::cuda(0), Device::cuda(1), Device::cuda(2), Device::cuda(3)});
  auto plan = runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::cuda(0), three, own);
  CHECK(plan.boundaries == std::vector<BoundaryPath>{direct, direct});
  CHECK_THAT(plan.line, Catch::StartsWith("device cuda:0: stage boundaries go device to device on NCCL; the gradient "
                                          "allreduce of stage(s) 1 runs on NCCL"));
  CHECK(runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::mpi, Device::cuda(0), three, own).boundaries ==
        std::vector<BoundaryPath>{staged, staged});
  CHECK_THAT(runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::mpi, Device::cuda(0), three, own).line,
             Catch::Contains("stage boundaries are host-staged over MPI (device -> host -> device), because "
                             "--boundary-backend mpi"));

  // Ranks 2 and 3 share cuda:2: boundary 1 (stages 1 and 2: ranks 1, 2, 3) falls back, boundary 0 does not.
  const comm::DevicePlacement shared({0, 0, 0, 0}, {Device::cuda(0), Device::cuda(1), Device::cuda(2), Device::cuda(2)});
  plan = runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::cuda(0), three, shared);
  CHECK(plan.boundaries == std::vector<BoundaryPath>{direct, staged});
  CHECK_THAT(plan.line, Catch::Contains("stage boundaries 0 go device to device on NCCL; boundaries 1 are host-staged "
                                        "over MPI (device -> host -> device), because ranks 2 and 3 share cuda:2 of node 0"));
  CHECK_THROWS_WITH(runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::nccl, Device::cuda(0), three, shared),
                    Catch::Contains("--boundary-backend nccl: stage boundary 1 (stages 1 and 2) cannot use NCCL: ranks "
                                    "2 and 3 share cuda:2"));

  // One stage: no boundaries. The sim device: its stand-in where the sim devices differ; cpu: MPI.
  const comm::ParallelLayout one = comm::ParallelLayout::from_table({{0, 1}});
  CHECK_THAT(runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::cuda(0), one, own).line,
             Catch::Contains("one stage, no stage boundaries; the gradient allreduce of stage(s) 0 runs on NCCL"));
  const comm::ParallelLayout two = comm::ParallelLayout::from_table({{0}, {1}});
  const comm::DevicePlacement sims({0, 0}, {Device::sim(0), Device::sim(1)});
  plan = runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::sim(0), two, sims);
  CHECK(plan.boundaries == std::vector<BoundaryPath>{direct});
  CHECK_THAT(plan.line, Catch::Contains("stage boundaries go device to device on NCCL's stand-in (MPI matched by order)"));
  CHECK_THROWS_WITH(runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::nccl, Device::sim(0), two, sims),
                    Catch::Contains("--boundary-backend nccl needs --device cuda (this run computes on sim:0)"));
  const comm::DevicePlacement host({0, 0}, {Device::cpu(), Device::cpu()});
  CHECK(runtime::detail::plan_communication(runtime::BackendChoice::automatic, runtime::BackendChoice::automatic, Device::cpu(), two, host).boundaries ==
        std::vector<BoundaryPath>{staged});
}

// LOOM_SIM_DEVICES=4 gives every rank a sim device of its own, so the boundaries go device-direct
// on NCCL's stand-in: matched by order, straight into device memory. Training equals the CPU run
// bit for bit under 1F1B (dapple), interleaved (two links per rank pair) and zero-bubble schedules.
TEST_CASE("Trainer on distinct sim devices: device-direct boundaries equal the CPU run", "[runtime][device][sim][mpi]") {
  REQUIRE(comm::world_size() == 4);
  for (const std::string schedule : {"dapple", "interleaved", "zb-h1"}) {
    for (const std::string model : {"mlp", "gpt"}) {
      INFO("model " << model << ", schedule " << schedule);
      runtime::TrainerConfig cpu = config_for(model, "cpu"), sim = config_for(model, "sim");
      cpu.schedule = sim.schedule = schedule;
      const Run reference = train(cpu);
      setenv("LOOM_SIM_DEVICES", "4", 1);
      std::vector<double> losses;
      test::Weights weights;
      {
        runtime::Trainer trainer(sim);
        CHECK(trainer.device() == Device::sim(comm::world_rank()));
        const int boundaries = schedule == "interleaved" ? 3 : 1;
        for (int b = 0; b < boundaries; ++b) CHECK(trainer.groups().link(b).path() == comm::BoundaryPath::device_direct);
        losses = trainer.run({}).losses;
        weights = final_weights(trainer);
      }
      unsetenv("LOOM_SIM_DEVICES");
      test::check_losses(losses, reference.losses, 0);
      test::check_final_weights(weights, reference.weights, 0);
    }
  }
}

// bf16 and fp16 on the sim device: the casts of 16-bit boundary tensors, the rounding, the masters
// and (fp16) the loss scale's skip decision all stay on the device, host-staged and device-direct,
// and train exactly as on the CPU.
TEST_CASE("Trainer in bf16 and fp16 on sim devices equals the CPU run", "[runtime][device][sim][mpi]") {
  REQUIRE(comm::world_size() == 4);
  for (const std::string precision : {"bf16", "fp16"}) {
    INFO("precision " << precision);
    runtime::TrainerConfig cpu = config_for("gpt", "cpu"), sim = config_for("gpt", "sim");
    cpu.precision = sim.precision = precision;
    const Run reference = train(cpu);
    const Run shared = train(sim);  // one shared sim device: host-staged boundaries
    test::check_losses(shared.losses, reference.losses, 0);
    test::check_final_weights(shared.weights, reference.weights, 0);
    setenv("LOOM_SIM_DEVICES", "4", 1);
    std::vector<double> losses;
    test::Weights weights;
    {
      runtime::Trainer trainer(sim);
      CHECK(trainer.groups().link(0).path() == comm::BoundaryPath::device_direct);
      losses = trainer.run({}).losses;
      weights = final_weights(trainer);
    }
    unsetenv("LOOM_SIM_DEVICES");
    test::check_losses(losses, reference.losses, 0);
    test::check_final_weights(weights, reference.weights, 0);
  }
}
