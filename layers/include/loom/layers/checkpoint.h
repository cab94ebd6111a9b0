// Checkpoints: a model's parameters (and buffers) and optionally its optimizer's state in one
// safetensors file. Tensors are named by full parameter name ("blocks.3.attn.qkv.weight") and
// "optimizer.<state name>"; the metadata holds the format, the optimizer type and step count, a
// checksum of every tensor (name, dtype, shape, bytes) and whatever the caller adds. Files are
// written to a temporary name and renamed, so a crash never leaves a half-written checkpoint.
// Loading checks everything: a truncated or corrupted file, a missing or unexpected tensor, or a
// shape that differs gives a loom::Error naming the file, the layer, the parameter and both shapes.
// Parameters may live on any device: saving copies them to host memory first (charged to
// MemoryCategory::communication), loading copies the file's host tensors into them.
#pragma once

#include <string>
#include <vector>

#include <loom/layers/layer.h>
#include <loom/layers/optimizer.h>
#include <loom/layers/safetensors.h>

namespace loom {

void save_checkpoint(const std::string& path, Layer& model, Optimizer* optimizer = nullptr,
                     const safetensors::Metadata& extra = {});

// Restores the model (and the optimizer, which the file must then hold). Returns the metadata.
safetensors::Metadata load_checkpoint(const std::string& path, Layer& model, Optimizer* optimizer = nullptr);

// The same for an explicit list of parameters (e.g. the blocks of several pipeline chunks).
void save_checkpoint(const std::string& path, const std::vector<NamedParameter>& parameters, Optimizer* optimizer,
                     const safetensors::Metadata& extra = {});
safetensors::Metadata load_checkpoint(const std::string& path, const std::vector<NamedParameter>& parameters,
                                      Optimizer* optimizer);

// The checksum stored under "loom.checksum" ("fnv1a64:" + 16 hex digits), of host tensors.
std::string checkpoint_checksum(const safetensors::NamedTensors& tensors);

}  // namespace loom
