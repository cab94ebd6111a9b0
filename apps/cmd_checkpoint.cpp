// `loom checkpoint inspect DIR` (the layout that wrote a training checkpoint, its step, tensors,
// sizes and verified checksums) and `loom checkpoint export DIR --out model.safetensors` (every
// parameter once, named by its block as `loom describe` names it, tied ones under each name, in one
// safetensors file, so the weights leave loom for other tools).
// DIR is what `loom train --resume` takes: a checkpoint directory (its newest committed step) or
// one step directory.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <loom/core/bytes_text.h>
#include <loom/base/error.h>
#include <loom/layers/safetensors.h>
#include <loom/models/model.h>
#include <loom/runtime/checkpoint_reader.h>
#include <loom/runtime/training_checkpoint.h>

#include "commands.h"

namespace loom::apps {

namespace {

using runtime::CheckpointReader;

std::string ranges_text(const std::vector<runtime::BlockRange>& ranges) {
  std::string text;
  for (const auto& [first, last] : ranges)
    text += (text.empty() ? "" : " ") + std::string("[") + std::to_string(first) + ", " + std::to_string(last) + ")";
  return text;
}

std::string field_text(const nlohmann::json& manifest, const char* field) {
  if (!manifest.contains(field)) return "?";
  const nlohmann::json& value = manifest[field];
  return value.is_string() ? value.get<std::string>() : excerpt(value.dump());
}

// The model's settings as `key=value, ...` (the manifest holds them as a JSON object of numbers).
std::string settings_text(const nlohmann::json& manifest) {
  if (!manifest.contains("settings") || !manifest["settings"].is_object()) return "?";
  std::string text;
  for (const auto& [key, value] : manifest["settings"].items()) {
    char number[32];
    std::snprintf(number, sizeof number, "%g", value.is_number() ? value.get<double>() : 0.0);
    text += (text.empty() ? "" : ", ") + key + "=" + (value.is_number() ? number : excerpt(value.dump()));
  }
  return "(" + text + ")";
}

// The writing run, from the manifest: model, settings, step, precision, its stages and replicas.
void print_run(const CheckpointReader& reader) {
  const nlohmann::json& m = reader.manifest();
  std::printf("checkpoint %s: step %lld, format %s\n", reader.directory().c_str(), static_cast<long long>(reader.step()),
              field_text(m, "format").c_str());
  std::printf("model %s %s, precision %s, global batch %s, seed %s, lr schedule %s over %s steps\n",
              field_text(m, "model").c_str(), settings_text(m).c_str(), field_text(m, "precision").c_str(),
              field_text(m, "global_batch").c_str(), field_text(m, "seed").c_str(), field_text(m, "lr_schedule").c_str(),
              field_text(m, "total_steps").c_str());
  std::printf("written at %zu stage(s), %s chunk(s) per stage, replicas per stage %s\n", reader.stages().size(),
              field_text(m, "chunks").c_str(), m.contains("replicas") ? excerpt(m["replicas"].dump()).c_str() : "(not recorded)");
}

// Every stage file: its blocks, tensors and bytes; each tensor read and its checksum verified.
void inspect(const std::string& dir, bool list_tensors) {
  CheckpointReader reader(runtime::find_checkpoint(dir));
  print_run(reader);
  std::int64_t total_bytes = 0, total_tensors = 0;
  for (std::size_t s = 0; s < reader.stages().size(); ++s) {
    loom::CheckpointFile& file = reader.file(s);
    std::int64_t bytes = 0, parameters = 0;
    for (const safetensors::Entry& entry : file.header().entries) {
      const Tensor tensor = file.read(entry.name);  // checks the stored checksum
      bytes += static_cast<std::int64_t>(entry.end - entry.begin);
      const bool state = entry.name.rfind(optimizer_tensor_name(""), 0) == 0;
      if (!state) parameters += entry.shape.numel();
      if (list_tensors)
        std::printf("  %-12s %-48s %-4s %-16s %10lld B\n", ("stage" + std::to_string(s)).c_str(), entry.name.c_str(),
                    std::string(dtype_name(entry.dtype)).c_str(), entry.shape.str().c_str(),
                    static_cast<long long>(entry.end - entry.begin));
    }
    std::printf("stage %zu: blocks %s, %zu tensors (%lld parameter values), %s, optimizer %s after %lld steps, "
                "checksums ok\n",
                s, ranges_text(reader.stages()[s].blocks).c_str(), file.header().entries.size(),
                static_cast<long long>(parameters), bytes_text(static_cast<double>(bytes)).c_str(),
                file.optimizer_type().c_str(), static_cast<long long>(file.optimizer_steps()));
    total_bytes += bytes;
    total_tensors += static_cast<std::int64_t>(file.header().entries.size());
    for (const std::string& path : reader.stages()[s].slice_files) {  // ZeRO-1: each replica's optimizer state
      loom::CheckpointFile& slices = reader.slice_file(path);
      std::int64_t slice_bytes = 0;
      for (const safetensors::Entry& entry : slices.header().entries) {
        slices.read(entry.name);  // checks the stored checksum
        slice_bytes += static_cast<std::int64_t>(entry.end - entry.begin);
      }
      reader.slice_ranges(path);  // checks every range
      std::printf("  %s: %zu optimizer-state slices, %s, checksums ok\n",
                  std::filesystem::path(path).filename().c_str(), slices.header().entries.size(),
                  bytes_text(static_cast<double>(slice_bytes)).c_str());
      total_bytes += slice_bytes;
      total_tensors += static_cast<std::int64_t>(slices.header().entries.size());
    }
  }
  std::printf("%lld tensors, %s in all\n", static_cast<long long>(total_tensors),
              bytes_text(static_cast<double>(total_bytes)).c_str());
}

// The model that wrote the checkpoint, rebuilt from its manifest (a loom preset and its settings),
// for its block names and ties; nothing for a model of the user's own (or an unreadable manifest).
std::optional<ModelSpec> checkpoint_model(const nlohmann::json& manifest) {
  if (!manifest.contains("model") || !manifest["model"].is_string() || !manifest.contains("settings") ||
      !manifest["settings"].is_object())
    return std::nullopt;
  std::string overrides;
  for (const auto& [key, value] : manifest["settings"].items()) {
    if (!value.is_number()) return std::nullopt;
    char number[40];
    std::snprintf(number, sizeof number, "%.17g", value.get<double>());
    overrides += (overrides.empty() ? "" : ",") + key + "=" + number;
  }
  try {
    return make_model(manifest["model"].get<std::string>(), overrides);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// A tensor's exported name: its leading block index as `loom describe` names the block
// ("1.self_attn.qkv.weight" -> "layer0.self_attn.qkv.weight"); unchanged without a model.
std::string exported_name(const std::string& name, const std::optional<ModelSpec>& model) {
  const std::size_t dot = name.find('.');
  if (!model || dot == std::string::npos) return name;
  std::size_t used = 0;
  std::int64_t block = -1;
  try {
    block = std::stoll(name.substr(0, dot), &used);
  } catch (const std::exception&) {
    return name;
  }
  if (used != dot || block < 0 || block >= model->blocks()) return name;
  return model->block_names.at(static_cast<std::size_t>(block)) + name.substr(dot);
}

// Every parameter (and buffer) of every stage file once; a name held by several stage files (tied
// copies) must hold the same bits in each.
safetensors::NamedTensors read_weights(CheckpointReader& reader) {
  std::map<std::string, Tensor> weights;
  safetensors::NamedTensors ordered;
  for (std::size_t s = 0; s < reader.stages().size(); ++s) {
    loom::CheckpointFile& file = reader.file(s);
    for (const safetensors::Entry& entry : file.header().entries) {
      if (entry.name.rfind(optimizer_tensor_name(""), 0) == 0) continue;
      Tensor tensor = file.read(entry.name);
      const auto [it, added] = weights.emplace(entry.name, tensor);
      if (added) {
        ordered.emplace_back(entry.name, tensor);
        continue;
      }
      LOOM_CHECK(it->second.shape() == tensor.shape() && it->second.dtype() == tensor.dtype() &&
                     std::equal(static_cast<const char*>(it->second.raw_data()),
                                static_cast<const char*>(it->second.raw_data()) + it->second.nbytes(),
                                static_cast<const char*>(tensor.raw_data())),
                 file.path(), ": '", entry.name, "' differs from its copy in another stage file");
    }
  }
  return ordered;
}

// Every parameter by its block's name (exported_name), a tied parameter under each name that uses
// it (the checkpoint holds the canonical only), and the manifest's facts as whole JSON metadata.
void export_weights(const std::string& dir, const std::string& out) {
  CheckpointReader reader(runtime::find_checkpoint(dir));
  const nlohmann::json& m = reader.manifest();
  const std::optional<ModelSpec> model = checkpoint_model(m);
  safetensors::NamedTensors exported;
  std::map<std::string, Tensor> by_name;
  for (const auto& [name, tensor] : read_weights(reader)) {
    exported.emplace_back(exported_name(name, model), tensor);
    by_name.emplace(name, tensor);
  }
  nlohmann::json ties = nlohmann::json::array();
  for (const ParameterTie& tie : model ? model->ties : std::vector<ParameterTie>{}) {
    const auto canonical = by_name.find(tie.canonical);
    if (canonical == by_name.end() || by_name.count(tie.copy)) continue;
    exported.emplace_back(exported_name(tie.copy, model), canonical->second);
    ties.push_back({{"canonical", exported_name(tie.canonical, model)}, {"copy", exported_name(tie.copy, model)}});
  }
  safetensors::save(out, exported,
                    {{"format", "pt"},
                     {"loom.model", field_text(m, "model")},
                     {"loom.settings", m.contains("settings") ? m["settings"].dump() : "{}"},
                     {"loom.step", std::to_string(reader.step())},
                     {"loom.precision", field_text(m, "precision")},
                     {"loom.ties", ties.dump()}});
  std::int64_t values = 0;
  for (const auto& [name, tensor] : exported) values += tensor.numel();
  std::printf("wrote %s: %zu tensors, %lld values, from %s (step %lld)%s%s\n", out.c_str(), exported.size(),
              static_cast<long long>(values), reader.directory().c_str(), static_cast<long long>(reader.step()),
              ties.empty() ? "" : "; tied parameters under each of their names (loom.ties)",
              model ? "" : "; names by block index (not a loom preset)");
}

struct CheckpointFlags {
  std::string dir, out;
  bool tensors = false;
};

}  // namespace

void add_checkpoint_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("checkpoint", "Training checkpoints (loom train --checkpoint): inspect one, or "
                                                   "export its weights as one safetensors file");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<CheckpointFlags>();
  CLI::App* ins = cmd->add_subcommand("inspect", "The layout that wrote DIR's newest checkpoint, its step, every stage "
                                                 "file's blocks, tensors and size; verifies every checksum");
  ins->add_option("dir", flags->dir, "A checkpoint directory (its newest committed step) or one step directory")
      ->required();
  ins->add_flag("--tensors", flags->tensors, "List every tensor: stage file, name, dtype, shape, bytes");
  ins->callback([flags] { inspect(flags->dir, flags->tensors); });
  CLI::App* exp = cmd->add_subcommand("export", "Every parameter of DIR's newest checkpoint in one safetensors file "
                                                "(no optimizer state), named by block as loom describe names them "
                                                "(layer0.self_attn.qkv.weight), a tied one under each name");
  exp->add_option("dir", flags->dir, "A checkpoint directory (its newest committed step) or one step directory")
      ->required();
  exp->add_option("--out", flags->out, "The safetensors file to write")->required();
  exp->callback([flags] { export_weights(flags->dir, flags->out); });
}

}  // namespace loom::apps
