// The Trainer on a GPU (gpu label; without a GPU, or in a build without CUDA, it says so and exits
// with 77, which ctest reports as skipped). Under mpiexec -n 2 both ranks take their GPU from the
// local rank (one GPU: both share it, the host-staged path), train the tiny mlp and gpt 2 stages x
// 1 replica for 10 steps, and every loss and final weight (norm-wise) is within 1e-4 (relative) of
// the same run on the CPU; with --precision bf16 or fp16 (tensor-core GEMMs on the GPU, rounded
// copies on the CPU) within 1e-2: the f32 sums' order differs, and a value next to a rounding
// boundary may land one 16-bit step apart, which training carries on. Both tolerances (1e-4,
// 1e-2; also in the test's name) are estimates, never measured: no GPU has run this test yet; the
// test prints the measured spread of losses and weights (a WARN per model and precision) for the
// first GPU run to set them from.
#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include <loom/comm/mpi_session.h>
#include <loom/runtime/trainer.h>

#include "compare_runs.h"
#include "skip_without_gpu.h"
#include "tiny_run.h"

using namespace loom;

TEST_CASE("Trainer --device cuda trains like the CPU (fp32 within 1e-4, bf16 and fp16 within 1e-2)",
          "[runtime][device][gpu][mpi]") {
  test::skip_without_gpu();  // each rank: MPI has not started yet
  for (const std::string precision : {"fp32", "bf16", "fp16"}) {
    // Not measured: no GPU has run this test yet; 1e-4 (fp32) and 1e-2 (bf16, fp16) are estimates.
    const double tolerance = precision == "fp32" ? 1e-4 : 1e-2;
    for (const std::string model : {"mlp", "gpt"}) {
      INFO("model " << model << ", precision " << precision);
      runtime::TrainerConfig config = test::tiny_run(model, "cpu", 1, 10);
      config.precision = precision;
      test::Weights cpu_weights, gpu_weights;
      const std::vector<double> cpu = test::train_keeping_weights(config, cpu_weights).losses;
      config.device = "cuda";
      runtime::Trainer gpu(config);
      CHECK(gpu.device() == Device::cuda(comm::world_rank() % cuda_device_count()));
      const std::vector<double> losses = gpu.run().losses;
      for (Chain* chunk : gpu.chunks())
        for (const NamedParameter& p : chunk->parameters())
          gpu_weights[p.name] = p.parameter->value.to(Device::cpu()).to_double_vector();
      // The spread itself, printed for the first GPU run to set the tolerances from (~10x it).
      double loss_spread = 0, weight_spread = 0;
      for (std::size_t i = 0; i < std::min(cpu.size(), losses.size()); ++i)
        loss_spread = std::max(loss_spread, std::abs(losses[i] - cpu[i]) / std::abs(cpu[i]));
      for (const auto& [name, values] : gpu_weights)
        if (cpu_weights.count(name)) weight_spread = std::max(weight_spread, test::norm_relative_error(values, cpu_weights.at(name)));
      WARN("measured on this GPU: " << model << " " << precision << ", rank " << comm::world_rank()
                                    << ": largest relative loss difference " << loss_spread
                                    << ", largest norm-wise relative weight difference " << weight_spread);
      test::check_losses(losses, cpu, tolerance);
      test::check_final_weights(gpu_weights, cpu_weights, tolerance);
    }
  }
}
