// Training checkpoints (see train_checkpoint.h).
#include <loom/runtime/training_checkpoint.h>

#include <exception>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include <loom/comm/control.h>
#include <loom/core/error.h>
#include <loom/layers/checkpoint.h>

namespace loom::runtime {

namespace {

constexpr const char* kFormat = "loom-train-checkpoint/1";
namespace fs = std::filesystem;

std::string stage_name(int stage) { return "stage" + std::to_string(stage); }

nlohmann::json blocks_json(const CheckpointLayout& layout) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& [first, last] : layout.blocks) blocks.push_back({first, last});
  return blocks;
}

// Writes JSON to a temporary name and renames it, so a reader never sees half a file.
void write_json(const fs::path& path, const nlohmann::json& value) {
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary);
    LOOM_CHECK(out.good(), temporary.string(), ": cannot open for writing");
    out << value.dump(2) << "\n";
    LOOM_CHECK(out.good(), temporary.string(), ": write failed");
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  LOOM_CHECK(!error, path.string(), ": cannot move the written file into place (", error.message(), ")");
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  LOOM_CHECK(in.good(), path.string(), ": cannot open (is this a checkpoint directory written by loom train --checkpoint?)");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(path.string(), ": not valid JSON (", e.what(), ")");
  }
}

// A field of a manifest that must equal what this run has.
template <typename T>
void expect(const nlohmann::json& manifest, const fs::path& path, const char* field, const T& wanted) {
  LOOM_CHECK(manifest.contains(field), path.string(), ": missing field '", field, "'");
  T found;
  try {
    found = manifest.at(field).get<T>();
  } catch (const nlohmann::json::exception&) {
    LOOM_THROW(path.string(), ": field '", field, "' has the wrong type");
  }
  LOOM_CHECK(found == wanted, path.string(), ": the checkpoint has ", field, " ", nlohmann::json(found).dump(),
             " but this run has ", nlohmann::json(wanted).dump());
}

// Collective: rethrows this rank's error, else says whether another rank had one.
bool any_rank_failed(comm::Communicator& world, const std::exception_ptr& error_here) {
  const bool any = comm::any_member(world, error_here != nullptr);
  if (error_here) std::rethrow_exception(error_here);
  return any;
}

// A decaying learning rate depends on the run's length: resuming with another length (or schedule)
// would silently change the rates of the remaining steps. Checkpoints without these fields (older
// loom) are taken as they are.
void check_learning_rate_path(const nlohmann::json& manifest, const fs::path& path, const CheckpointLayout& layout) {
  if (!manifest.contains("lr_schedule") || !manifest.contains("total_steps")) return;
  const bool decaying = layout.lr_schedule != "constant" || manifest["lr_schedule"] != "constant";
  if (!decaying) return;
  expect(manifest, path, "lr_schedule", layout.lr_schedule);
  LOOM_CHECK(manifest["total_steps"].is_number_integer() && manifest["total_steps"].get<std::int64_t>() == layout.total_steps,
             path.string(), ": the checkpoint's run had ", excerpt(manifest["total_steps"].dump()), " steps in all under the ",
             layout.lr_schedule, " learning-rate schedule, this run ", layout.total_steps,
             ": resuming would change the learning rate of every remaining step (give the same --steps or --epochs, "
             "or --lr-schedule constant)");
}

}  // namespace

void save_training_checkpoint(comm::Communicator& world, const std::string& dir, const CheckpointLayout& layout,
                              std::int64_t step, const std::vector<NamedParameter>& parameters, Optimizer& optimizer,
                              bool writer) {
  const fs::path root(dir);
  const int rank = world.rank();
  // Any rank's failure must stop every rank, not leave the others in the barrier.
  std::exception_ptr error_here;
  try {
    if (writer || rank == 0) {
      std::error_code error;
      fs::create_directories(root, error);
      LOOM_CHECK(fs::is_directory(root), dir, ": cannot create the checkpoint directory (", error.message(), ")");
    }
    if (writer) {
      const std::string file = stage_name(layout.stage) + ".safetensors";
      save_checkpoint((root / file).string(), parameters, &optimizer, {{"loom.train.step", std::to_string(step)}});
      write_json(root / (stage_name(layout.stage) + ".json"),
                 {{"format", kFormat}, {"stage", layout.stage}, {"step", step}, {"file", file},
                  {"blocks", blocks_json(layout)}, {"optimizer", optimizer.type()}});
    }
  } catch (...) {
    error_here = std::current_exception();
  }
  if (any_rank_failed(world, error_here)) LOOM_THROW(dir, ": another rank failed to write its stage's checkpoint");
  if (rank == 0)
    write_json(root / "manifest.json", {{"format", kFormat},
                                        {"step", step},
                                        {"model", layout.model},
                                        {"settings", layout.settings},
                                        {"stages", layout.stages},
                                        {"chunks", layout.chunks},
                                        {"global_batch", layout.global_batch},
                                        {"seed", layout.seed},
                                        {"lr_schedule", layout.lr_schedule},
                                        {"total_steps", layout.total_steps}});
  world.barrier();
}

namespace {
std::int64_t load_stage(const std::string& dir, const CheckpointLayout& layout,
                        const std::vector<NamedParameter>& parameters, Optimizer& optimizer) {
  const fs::path root(dir);
  const fs::path manifest_path = root / "manifest.json";
  const nlohmann::json manifest = read_json(manifest_path);
  expect(manifest, manifest_path, "format", std::string(kFormat));
  expect(manifest, manifest_path, "model", layout.model);
  expect(manifest, manifest_path, "settings", layout.settings);
  expect(manifest, manifest_path, "stages", layout.stages);
  expect(manifest, manifest_path, "chunks", layout.chunks);
  expect(manifest, manifest_path, "global_batch", layout.global_batch);
  expect(manifest, manifest_path, "seed", layout.seed);
  LOOM_CHECK(manifest.contains("step") && manifest["step"].is_number_integer() && manifest["step"].get<std::int64_t>() >= 0,
             manifest_path.string(), ": missing or bad field 'step'");
  const auto step = manifest["step"].get<std::int64_t>();
  check_learning_rate_path(manifest, manifest_path, layout);

  const fs::path stage_path = root / (stage_name(layout.stage) + ".json");
  const nlohmann::json stage = read_json(stage_path);
  expect(stage, stage_path, "format", std::string(kFormat));
  expect(stage, stage_path, "stage", layout.stage);
  expect(stage, stage_path, "step", step);  // a stage file from another save than the manifest
  expect(stage, stage_path, "blocks", blocks_json(layout));
  LOOM_CHECK(stage.contains("file") && stage["file"].is_string(), stage_path.string(), ": missing field 'file'");
  const std::string file = (root / stage["file"].get<std::string>()).string();
  const safetensors::Metadata metadata = load_checkpoint(file, parameters, &optimizer);
  const auto saved = metadata.find("loom.train.step");
  LOOM_CHECK(saved != metadata.end() && saved->second == std::to_string(step), file, ": taken after step ",
             saved == metadata.end() ? std::string("?") : saved->second, " but ", manifest_path.string(), " says ", step);
  return step;
}
}  // namespace

std::int64_t load_training_checkpoint(comm::Communicator& world, const std::string& dir, const CheckpointLayout& layout,
                                      const std::vector<NamedParameter>& parameters, Optimizer& optimizer) {
  // Every rank learns whether any failed, so that all stop together instead of some waiting in the
  // first pipeline transfer for a stage that gave up.
  std::int64_t step = -1;
  std::exception_ptr error_here;
  try {
    step = load_stage(dir, layout, parameters, optimizer);
  } catch (...) {
    error_here = std::current_exception();
  }
  if (any_rank_failed(world, error_here))
    LOOM_THROW(dir, ": another rank could not load its stage's checkpoint (its message says why)");
  return step;
}

}  // namespace loom::runtime
