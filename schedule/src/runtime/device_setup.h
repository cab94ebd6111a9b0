// Where a rank of the Trainer computes, from TrainerConfig::device (trainer.h), and the one line
// that says how its tensors move.
#pragma once

#include <string>

#include <loom/core/device.h>

namespace loom::runtime::detail {

// The text alone (no MPI, no GPU query): cpu, cuda, cuda:N, sim or sim:N.
void validate_device(const std::string& text);
// This rank's device. "cuda" is GPU local_rank % (GPUs visible); errors name --device and say why
// (no CUDA backend in this build, no GPU visible, cuda:N past the GPUs visible).
Device resolve_device(const std::string& text, int local_rank);
// "device sim:0: stage boundaries and the gradient allreduce are host-staged over MPI (...)".
std::string transfer_path(Device device, int ranks_on_node);

}  // namespace loom::runtime::detail
