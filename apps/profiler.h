// The profiler behind `loom profile`: measures loom's own model, block by block, on this machine
// and returns it as the planners' Profile (planner/profile.h), so that plans for loom's models rest
// on measured costs rather than on published ones.
//
// Blocks run as a stage runs them, on one synthetic micro-batch: a pass is every block's forward
// (under MemoryCategory::activations) and then every block's backward (under workspace), so each
// block sees its real input and gradient, and a block's weights are as cold in cache as they are
// in training. The last block includes the loss (its forward, backward and what it keeps).
//   forward_ms, backward_ms  medians over `repeats` timed passes after `warmup` untimed ones
//   boundary_bytes           bytes of the block's outputs (what crosses a cut after it)
//   activation_bytes         bytes the block's forward allocates that stay alive until backward:
//                            what its own context keeps, plus its outputs when only the next
//                            block keeps them (each tensor is charged to the block that made it,
//                            so a stage's blocks add up to the stage; at a cut the sender then
//                            counts an output that in fact only the receiver keeps, as a copy)
//   parameter_bytes          Layer::parameter_bytes (trainable parameters and buffers)
//   backward_input_ms, backward_weight_ms   medians of split passes (every forward, every BI, then
//                            every BW, as a zero-bubble kind runs a chunk), alternating with the
//                            fused ones; an Adam step with learning rate 0 runs before every pass, so
//                            the caches are as a training step leaves them
//   forward/backward/input/weight_workspace_bytes   the ledger's peak while the block's F, B, BI or
//                            BW runs, above what is live after the F or before the others
//   split_held_bytes         what its BI leaves live for its BW (beyond its input gradient), less what it
//                            frees of its activations: negative where it frees more than it leaves
// and for the model: input_bytes and target_bytes of one micro-batch, data_ms (reading one), and
// step_ms_per_mb (an sgd-with-momentum and an Adam step over every parameter, per MB).
// On a device (ProfileOptions::device) the bytes are that device's ledger, the same numbers as on
// the CPU for the same model (tests/apps/profiler_test.cpp proves it on the sim device).
#pragma once

#include <cstdint>
#include <string>

#include <loom/models/model.h>
#include <loom/planner/profile.h>

namespace loom::apps {

struct ProfileOptions {
  std::string model = "mlp";
  std::string size = "paper";    // --size paper|cpu|tiny
  std::string overrides;         // --set key=value,...
  std::int64_t microbatch = 32;  // samples per micro-batch
  int threads = 0;               // 0: LOOM_NUM_THREADS or cores / local ranks
  int repeats = 10;
  int warmup = 2;
  std::uint64_t seed = 1;
  // cpu, cuda[:N] or sim[:N]: blocks, data and the memory ledger on that device; each block's time
  // is wall-clock with the device drained (synchronize) before and after it.
  std::string device = "cpu";
};

planner::Profile profile_model(const ProfileOptions& options);

// Activation memory of one micro-batch of `rows` samples through blocks [first, last) of a model,
// as the executor charges it to a stage (its input arrives from outside: data or a receive; the
// last stage runs the loss). The simulator predicts a stage's peak from these numbers.
struct StageActivations {
  std::int64_t kept_bytes = 0;       // alive from the forward until its backward
  std::int64_t transient_bytes = 0;  // the forward's peak above kept_bytes (temporaries, outputs)
  std::int64_t output_bytes = 0;     // what the stage sends on (0 for the last stage)
};
StageActivations measure_stage_activations(const ModelSpec& spec, std::int64_t first, std::int64_t last,
                                           std::int64_t rows, std::uint64_t seed);

}  // namespace loom::apps
