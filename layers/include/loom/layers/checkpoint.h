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

#include <cstdint>
#include <map>
#include <optional>
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

// The same for an explicit list of parameters (e.g. the blocks of several pipeline chunks); the
// optimizer state saved is that of these parameters (a tied copy left out leaves its state out).
void save_checkpoint(const std::string& path, const std::vector<NamedParameter>& parameters, Optimizer* optimizer,
                     const safetensors::Metadata& extra = {});
safetensors::Metadata load_checkpoint(const std::string& path, const std::vector<NamedParameter>& parameters,
                                      Optimizer* optimizer);

// The same from tensors already on the host, optimizer state as "optimizer.<state name>" (a
// sharded optimizer's state gathered by its caller); `optimizer`: its type and step count, or null.
struct OptimizerRecord {
  std::string type;
  std::int64_t steps = 0;
};
void save_checkpoint_tensors(const std::string& path, safetensors::NamedTensors tensors, const OptimizerRecord* optimizer,
                             const safetensors::Metadata& extra = {});

// The checksum stored under "loom.checksum" ("fnv1a64:" + 16 hex digits), of host tensors.
std::string checkpoint_checksum(const safetensors::NamedTensors& tensors);
// One tensor's checksum (its name, dtype, shape and bytes). Files written by save_checkpoint also
// hold every tensor's under "loom.tensor_checksums" (a JSON object, name -> checksum), so a reader
// of some of the tensors (read_checkpoint_tensor) verifies what it reads without reading the rest.
std::string tensor_checksum(const std::string& name, const Tensor& host);

// A checkpoint file opened to read some of its tensors: the header is read and checked at once
// (a loom checkpoint, of this format), each tensor when asked for and checked against its stored
// checksum. Files without per-tensor checksums (loom before them) are read whole on the first
// request and checked by the file checksum, as load_checkpoint does.
class CheckpointFile {
 public:
  explicit CheckpointFile(const std::string& path);
  const std::string& path() const { return header_.path; }
  const safetensors::Header& header() const { return header_; }
  const safetensors::Metadata& metadata() const { return header_.metadata; }
  bool has(const std::string& name) const { return header_.find(name) != nullptr; }
  Tensor read(const std::string& name);  // a host tensor; an error naming the file if absent or damaged
  // The optimizer state's metadata: its type (e.g. "Adam") and step count, range-checked.
  std::string optimizer_type() const;
  std::int64_t optimizer_steps() const;

 private:
  safetensors::Header header_;
  std::map<std::string, std::string> checksums_;  // per tensor
  std::optional<safetensors::File> whole_;        // a file without per-tensor checksums, read once
};

// Copies a tensor read from a checkpoint (host) into a model tensor on any device, cast when the
// dtypes differ (an fp32 file into bf16 parameters).
void assign_from_checkpoint(Tensor& target, const Tensor& source);

// The name an optimizer state tensor has in a checkpoint file ("optimizer." + state name).
std::string optimizer_tensor_name(const std::string& state_name);

}  // namespace loom
