// Checkpoint save/load on top of safetensors (see checkpoint.h).
#include <loom/layers/checkpoint.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <loom/core/ops.h>

namespace loom {

namespace {

constexpr const char* kFormat = "loom-checkpoint/1";
constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kTensorChecksums = "loom.tensor_checksums";

std::string layer_of(const std::string& parameter) {
  const auto dot = parameter.rfind('.');
  return dot == std::string::npos ? std::string("(top level)") : parameter.substr(0, dot);
}

}  // namespace

namespace {
std::uint64_t hash_tensor(const std::string& name, const Tensor& host, std::uint64_t hash) {
  require_host(host, "checkpoint_checksum of '" + name + "'");
  const std::string header = name + "|" + std::string(dtype_name(host.dtype())) + "|" + host.shape().str();
  hash = safetensors::fnv1a64(header.data(), header.size(), hash);
  if (host.nbytes() > 0) hash = safetensors::fnv1a64(host.raw_data(), host.nbytes(), hash);
  return hash;
}

std::string checksum_text(std::uint64_t hash) {
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(hash));
  return text;
}
}  // namespace

void assign_from_checkpoint(Tensor& target, const Tensor& source) {
  if (source.dtype() == target.dtype()) {
    target.copy_from(source);
    return;
  }
  Tensor cast = Tensor::empty(source.shape(), target.dtype());
  ops::cast(source, cast);
  target.copy_from(cast);
}

std::string checkpoint_checksum(const safetensors::NamedTensors& tensors) {
  std::vector<const std::pair<std::string, Tensor>*> sorted;
  for (const auto& entry : tensors) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const auto* entry : sorted) hash = hash_tensor(entry->first, entry->second, hash);
  return checksum_text(hash);
}

std::string tensor_checksum(const std::string& name, const Tensor& host) {
  return checksum_text(hash_tensor(name, host, 0xcbf29ce484222325ull));
}

void save_checkpoint(const std::string& path, Layer& model, Optimizer* optimizer, const safetensors::Metadata& extra) {
  save_checkpoint(path, model.parameters(), optimizer, extra);
}

safetensors::Metadata load_checkpoint(const std::string& path, Layer& model, Optimizer* optimizer) {
  return load_checkpoint(path, model.parameters(), optimizer);
}

void save_checkpoint(const std::string& path, const std::vector<NamedParameter>& parameters, Optimizer* optimizer,
                     const safetensors::Metadata& extra) {
  // Device tensors (cuda, sim) are staged to host memory here, explicitly: the file code takes host tensors only.
  safetensors::NamedTensors tensors;
  MemoryCategoryScope staging(MemoryCategory::communication);
  for (const NamedParameter& p : parameters) tensors.emplace_back(p.name, p.parameter->value.to(Device::cpu()));
  if (!optimizer) return save_checkpoint_tensors(path, std::move(tensors), nullptr, extra);
  std::set<std::string> saved;
  for (const NamedParameter& p : parameters) saved.insert(p.name);
  for (auto& [name, tensor] : optimizer->state())  // the state of the parameters saved (not of tied copies)
    if (saved.count(name.substr(0, name.rfind('.'))))
      tensors.emplace_back(kOptimizerPrefix + name, tensor.to(Device::cpu()));
  const OptimizerRecord record{optimizer->type(), optimizer->steps()};
  save_checkpoint_tensors(path, std::move(tensors), &record, extra);
}

void save_checkpoint_tensors(const std::string& path, safetensors::NamedTensors tensors, const OptimizerRecord* optimizer,
                             const safetensors::Metadata& extra) {
  safetensors::Metadata metadata = extra;
  metadata["loom.format"] = kFormat;
  if (optimizer) {
    metadata["loom.optimizer"] = optimizer->type;
    metadata["loom.optimizer.steps"] = std::to_string(optimizer->steps);
  }
  metadata["loom.checksum"] = checkpoint_checksum(tensors);
  nlohmann::json each = nlohmann::json::object();  // for readers of some of the tensors
  for (const auto& [name, tensor] : tensors) each[name] = tensor_checksum(name, tensor);
  metadata[kTensorChecksums] = each.dump();
  safetensors::save(path, tensors, metadata);  // under PATH.tmp, then renamed
}

namespace {
void check_format(const std::string& path, const safetensors::Metadata& metadata) {
  const auto format = metadata.find("loom.format");
  LOOM_CHECK(format != metadata.end() && format->second == kFormat, path, ": not a loom checkpoint (metadata ",
             "loom.format is ", format == metadata.end() ? std::string("missing") : "'" + format->second + "'", ")");
}

void check_file_checksum(const safetensors::File& file) {
  const auto checksum = file.metadata.find("loom.checksum");
  LOOM_CHECK(checksum != file.metadata.end(), file.path, ": checkpoint has no loom.checksum in its metadata");
  const std::string actual = checkpoint_checksum(file.tensors);
  LOOM_CHECK(actual == checksum->second, file.path, ": checkpoint is corrupted (checksum ", actual, ", metadata says ",
             checksum->second, ")");
}

std::string stored_optimizer_type(const std::string& path, const safetensors::Metadata& metadata) {
  const auto type = metadata.find("loom.optimizer");
  LOOM_CHECK(type != metadata.end(), path, ": checkpoint holds no optimizer state");
  return type->second;
}

std::int64_t stored_optimizer_steps(const std::string& path, const safetensors::Metadata& metadata) {
  const auto steps = metadata.find("loom.optimizer.steps");
  LOOM_CHECK(steps != metadata.end(), path, ": checkpoint lacks loom.optimizer.steps");
  std::int64_t count = -1;
  std::size_t used = 0;
  try {
    count = std::stoll(steps->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  // Adam's bias correction divides by 1 - beta^steps: a negative or absurd count would make NaN
  // of a resumed run (the metadata is outside the tensors' checksums), so it is range-checked.
  LOOM_CHECK(used == steps->second.size() && count >= 0 && count <= (std::int64_t{1} << 40), path,
             ": loom.optimizer.steps must be an integer in [0, 2^40], not '", excerpt(steps->second), "'");
  return count;
}
}  // namespace

std::string optimizer_tensor_name(const std::string& state_name) { return kOptimizerPrefix + state_name; }

safetensors::Metadata load_checkpoint(const std::string& path, const std::vector<NamedParameter>& parameters,
                                      Optimizer* optimizer) {
  safetensors::File file = safetensors::load(path);
  check_format(path, file.metadata);
  check_file_checksum(file);

  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, tensor] : file.tensors) by_name[name] = &tensor;
  const auto take = [&](const std::string& name, const std::string& what, Tensor& target) {
    const auto it = by_name.find(name);
    LOOM_CHECK(it != by_name.end(), path, ": no tensor for ", what, " (different architecture?)");
    LOOM_CHECK(it->second->shape() == target.shape(), path, ": ", what, " has shape ", target.shape().str(),
               " in the model but ", it->second->shape().str(), " in the file");
    assign_from_checkpoint(target, *it->second);
    by_name.erase(it);
  };
  for (const NamedParameter& p : parameters)
    take(p.name, "parameter '" + p.name + "' of layer '" + layer_of(p.name) + "'", p.parameter->value);

  if (optimizer) {
    const std::string type = stored_optimizer_type(path, file.metadata);
    LOOM_CHECK(type == optimizer->type(), path, ": checkpoint holds ", type, " state but the optimizer is ",
               optimizer->type());
    for (auto& [name, tensor] : optimizer->state()) {
      const std::string parameter = name.substr(0, name.rfind('.'));
      take(kOptimizerPrefix + name, "optimizer state '" + name + "' of layer '" + layer_of(parameter) + "'", tensor);
    }
    optimizer->set_steps(stored_optimizer_steps(path, file.metadata));
  } else {
    for (auto it = by_name.begin(); it != by_name.end();)
      it = it->first.rfind(kOptimizerPrefix, 0) == 0 ? by_name.erase(it) : std::next(it);
  }
  if (!by_name.empty())
    LOOM_THROW(path, ": the file holds '", by_name.begin()->first, "' (", by_name.size(),
               " tensor(s) in all) that the model does not have (different architecture?)");
  return file.metadata;
}

CheckpointFile::CheckpointFile(const std::string& path) : header_(safetensors::read_header(path)) {
  check_format(path, header_.metadata);
  const auto each = header_.metadata.find(kTensorChecksums);
  if (each == header_.metadata.end()) return;
  nlohmann::json table;
  try {
    table = nlohmann::json::parse(each->second);
  } catch (const nlohmann::json::exception&) {
    table = nullptr;
  }
  LOOM_CHECK(table.is_object(), path, ": metadata ", kTensorChecksums, " is not a JSON object");
  for (const auto& [name, value] : table.items()) {
    LOOM_CHECK(value.is_string(), path, ": metadata ", kTensorChecksums, " has a non-string checksum for '", excerpt(name), "'");
    checksums_[name] = value.get<std::string>();
  }
  for (const safetensors::Entry& entry : header_.entries)
    LOOM_CHECK(checksums_.count(entry.name) == 1, path, ": metadata ", kTensorChecksums, " lacks tensor '", entry.name, "'");
}

Tensor CheckpointFile::read(const std::string& name) {
  const safetensors::Entry* entry = header_.find(name);
  LOOM_CHECK(entry != nullptr, path(), ": no tensor '", name, "'");
  if (checksums_.empty()) {  // an older file: read whole and checked once
    if (!whole_) {
      whole_ = safetensors::load(path());
      check_file_checksum(*whole_);
    }
    return whole_->get(name);
  }
  Tensor tensor = safetensors::read_tensor(header_, *entry);
  const std::string actual = tensor_checksum(name, tensor);
  LOOM_CHECK(actual == checksums_.at(name), path(), ": corrupted tensor '", name, "' (checksum ", actual,
             ", metadata says ", checksums_.at(name), ")");
  return tensor;
}

std::string CheckpointFile::optimizer_type() const { return stored_optimizer_type(path(), metadata()); }
std::int64_t CheckpointFile::optimizer_steps() const { return stored_optimizer_steps(path(), metadata()); }

}  // namespace loom
