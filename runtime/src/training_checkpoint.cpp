// Training checkpoints (see training_checkpoint.h): step directories committed by DIR/latest.
#include <loom/runtime/training_checkpoint.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <type_traits>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <loom/comm/control.h>
#include <loom/base/error.h>
#include <loom/base/files.h>
#include <loom/base/json_fields.h>
#include <loom/base/json_input.h>
#include <loom/layers/checkpoint.h>
#include <loom/runtime/checkpoint_reader.h>
#include <spdlog/spdlog.h>

#include "checkpoint_json.h"

namespace loom::runtime {

namespace {

namespace fs = std::filesystem;
using detail::kCheckpointFormat;
using detail::kManifest;
using detail::stage_name;

nlohmann::json blocks_json(const std::vector<BlockRange>& ranges) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& [first, last] : ranges) blocks.push_back({first, last});
  return blocks;
}

constexpr const char* kLatest = "latest";

std::string step_directory_name(std::int64_t step) {
  char name[40];
  std::snprintf(name, sizeof name, "step-%06lld", static_cast<long long>(step));
  return name;
}

// The step of a directory named step-<digits>, or -1 for any other name.
std::int64_t step_of_directory(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() <= 5 || name.size() > 5 + 18) return -1;
  std::int64_t step = 0;
  for (const char c : name.substr(5)) {
    if (c < '0' || c > '9') return -1;
    step = step * 10 + (c - '0');
  }
  return step;
}

// A step directory is complete once rank 0 has written its manifest, which it does only after
// every stage's files are in place.
bool is_complete(const fs::path& directory) {
  std::error_code error;
  return fs::is_regular_file(directory / kManifest, error);
}

struct StepDirectory {
  std::int64_t step;
  fs::path path;
  bool complete;
};

// DIR's step directories, newest first.
std::vector<StepDirectory> step_directories(const fs::path& root) {
  std::vector<StepDirectory> found;
  std::error_code error;
  for (fs::directory_iterator it(root, error), end; !error && it != end; it.increment(error)) {
    const std::int64_t step = step_of_directory(it->path().filename().string());
    if (step >= 0 && it->is_directory(error)) found.push_back({step, it->path(), is_complete(it->path())});
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
  return found;
}

// Written under a temporary name, flushed and renamed, so a reader never sees half a file.
void write_json(const fs::path& path, const nlohmann::json& value) { write_file_atomically(path.string(), value.dump(2) + "\n"); }

// DIR/latest's step directory name ("step-000120"), checked.
std::string read_latest(const fs::path& path) {
  check_regular_file(path.string(), "the checkpoint pointer");
  std::ifstream in(path);
  std::string name, rest;
  in >> name >> rest;
  LOOM_CHECK(step_of_directory(name) >= 0 && rest.empty(), path.string(),
             ": expected the name of a step directory (step-N), got '", excerpt(name), "'");
  return name;
}

// Collective: runs `work` here, then every rank learns whether any failed, and the first failing
// rank's message. This rank's error is rethrown; on the others that message, followed by `aftermath`
// (what the failure left on disk), so that every rank's line names the cause. When any failed,
// `cleanup` runs first (on every rank, after every rank's work has ended).
void run_phase(comm::Communicator& world, const std::function<void()>& work, const std::string& aftermath = "",
               const std::function<void()>& cleanup = {}) {
  std::exception_ptr error_here;
  std::optional<std::string> message;
  try {
    work();
  } catch (const std::exception& error) {
    error_here = std::current_exception();
    message = error.what();
  } catch (...) {
    error_here = std::current_exception();
    message = "an unknown error";
  }
  const std::optional<std::string> failure = comm::first_failure(world, message);
  if (!failure) return;
  if (cleanup) cleanup();
  if (error_here) std::rethrow_exception(error_here);
  LOOM_THROW(*failure, aftermath);
}

// A name field of a manifest parsed by `parse` (precision.h's, LrSchedule's), or nothing where it is
// not a string or not a name `parse` knows.
template <typename Parse>
auto parsed_name(const nlohmann::json& value, Parse parse) -> std::optional<decltype(parse(std::string()))> {
  if (!value.is_string()) return std::nullopt;
  try {
    return parse(value.get<std::string>());
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The checkpoint's learning-rate schedule and the step it started at, into `point` (checked).
void read_learning_rate_path(const nlohmann::json& manifest, const fs::path& path, ResumePoint& point) {
  if (!manifest.contains("lr_schedule")) return;  // loom before the field
  point.lr_schedule = parsed_name(manifest["lr_schedule"], [](const std::string& name) { return LrSchedule::parse(name); });
  LOOM_CHECK(point.lr_schedule.has_value(), path.string(), ": bad field 'lr_schedule' ", excerpt(manifest["lr_schedule"].dump()),
             " (constant, linear or cosine)");
  point.lr_start = manifest.contains("lr_start") ? json::integer_field(manifest, "lr_start", path.string(), "", 0, point.step) : 0;
}

// The optimizer's state does not carry over to another kind (adam's moments are not sgd's buffers).
void check_optimizer(const nlohmann::json& manifest, const fs::path& path, const CheckpointLayout& layout) {
  if (layout.optimizer.empty() || !manifest.contains("optimizer")) return;  // loom before the field
  const nlohmann::json& found = manifest["optimizer"];
  LOOM_CHECK(found.is_string() && found.get<std::string>() == layout.optimizer, path.string(),
             ": the checkpoint was trained with --optimizer ", excerpt(found.is_string() ? found.get<std::string>() : found.dump()),
             ", this run has --optimizer ", layout.optimizer, " (resume with the same --optimizer: its state does not carry over)");
}

// Checkpoints of loom before --precision are fp32 ones.
void check_precision(const nlohmann::json& manifest, const fs::path& path, const CheckpointLayout& layout) {
  const nlohmann::json found = manifest.contains("precision") ? manifest["precision"] : nlohmann::json("fp32");
  LOOM_CHECK(parsed_name(found, parse_precision) == layout.precision, path.string(),
             ": the checkpoint was trained with --precision ", excerpt(found.is_string() ? found.get<std::string>() : found.dump()),
             ", this run has --precision ", precision_name(layout.precision), " (resume with the same --precision)");
}

nlohmann::json manifest_json(const CheckpointLayout& layout, std::int64_t step, const LossScaler* scaler) {
  nlohmann::json manifest = {{"format", kCheckpointFormat},           {"step", step},
                             {"model", layout.model},       {"settings", layout.settings},
                             {"stages", layout.stages},     {"chunks", layout.chunks},
                             {"global_batch", layout.global_batch}, {"seed", layout.seed},
                             {"lr_schedule", LrSchedule::name(layout.lr_schedule)}, {"lr_start", layout.lr_start},
                             {"total_steps", layout.total_steps}, {"lr", layout.lr},
                             {"precision", precision_name(layout.precision)},
                             {"replicas", layout.replicas}};
  if (!layout.optimizer.empty()) manifest["optimizer"] = layout.optimizer;
  nlohmann::json stages = nlohmann::json::array();  // every stage's chunks, for readers and `loom checkpoint inspect`
  for (const auto& chunks : layout.stage_blocks) stages.push_back(blocks_json(chunks));
  manifest["stage_blocks"] = stages;
  if (scaler) manifest["loss_scale"] = {{"scale", scaler->scale()}, {"good_steps", scaler->good_steps()}};
  return manifest;
}

// fp16: the loss scaler's state after the checkpoint's step (manifest_json).
void restore_loss_scale(const nlohmann::json& manifest, const fs::path& path, LossScaler& scaler) {
  const nlohmann::json* state = manifest.contains("loss_scale") ? &manifest["loss_scale"] : nullptr;
  LOOM_CHECK(state && state->is_object() && state->contains("scale") && state->contains("good_steps"), path.string(),
             ": missing or bad field 'loss_scale' (an fp16 checkpoint records {\"scale\": S, \"good_steps\": N})");
  const nlohmann::json& scale = (*state)["scale"];
  const nlohmann::json& good = (*state)["good_steps"];
  LOOM_CHECK(scale.is_number() && loss_scale_in_range(scale.get<double>()) && good.is_number_integer() &&
                 good.get<std::int64_t>() >= 0,
             path.string(), ": bad field 'loss_scale' ", excerpt(state->dump()),
             " (scale a number in [2^-24, 2^64], good_steps an integer >= 0)");
  scaler.restore(scale.get<double>(), good.get<std::int64_t>());
}

// Rank 0, before any stage writes: DIR exists and DIR/step-N does not (a leftover of a save at
// this step that died, or of another run). DIR/latest must not name a directory being rewritten.
void prepare_directory(const fs::path& root, const fs::path& step_directory) {
  std::error_code error;
  fs::create_directories(root, error);
  LOOM_CHECK(fs::is_directory(root), root.string(), ": cannot create the checkpoint directory (", error.message(), ")");
  fs::remove(root / (std::string(kLatest) + ".tmp"), error);
  if (!fs::exists(step_directory, error)) return;
  try {
    if (read_latest(root / kLatest) == step_directory.filename().string()) fs::remove(root / kLatest, error);
  } catch (const Error&) {  // no pointer, or a bad one: the commit replaces it
  }
  fs::remove_all(step_directory, error);
  LOOM_CHECK(!error, step_directory.string(), ": cannot remove the earlier checkpoint of this step (", error.message(), ")");
}

// Replica 0 of a stage: the stage's tensors and its small manifest.
// ZeRO-1: this replica's slices of the stage's optimizer state, each with its element range.
void write_slices(const fs::path& step_directory, const CheckpointLayout& layout, const StageTensors& gathered,
                  safetensors::Metadata run) {
  nlohmann::json ranges = nlohmann::json::object();
  for (const auto& [name, range] : gathered.ranges) ranges[name] = {range.first, range.second};
  run[detail::kSliceRanges] = ranges.dump();
  save_checkpoint_tensors((step_directory / detail::slice_file_name(layout.stage, gathered.replica)).string(),
                          gathered.slices, &gathered.optimizer, run);
}

// Replica 0 of a stage (`writer`): the stage's tensors and its small JSON; under ZeRO-1 every
// replica also writes its slices of the optimizer state.
void write_stage(const fs::path& step_directory, const CheckpointLayout& layout, std::int64_t step,
                 const std::vector<NamedParameter>& parameters, Optimizer& optimizer, const StageTensors* gathered,
                 bool writer) {
  std::error_code error;
  fs::create_directories(step_directory, error);
  LOOM_CHECK(fs::is_directory(step_directory), step_directory.string(), ": cannot create (", error.message(), ")");
  const std::string file = stage_name(layout.stage) + ".safetensors";
  const safetensors::Metadata run = {{"loom.train.step", std::to_string(step)},
                                     {"loom.train.seed", std::to_string(layout.seed)}};
  const int slices = gathered ? gathered->replicas : 0;
  if (slices > 0) write_slices(step_directory, layout, *gathered, run);
  if (!writer) return;
  if (gathered)
    save_checkpoint_tensors((step_directory / file).string(), gathered->tensors, &gathered->optimizer, run);
  else
    save_checkpoint((step_directory / file).string(), parameters, &optimizer, run);
  nlohmann::json stage = {{"format", kCheckpointFormat}, {"stage", layout.stage}, {"step", step}, {"file", file},
                          {"blocks", blocks_json(layout.blocks)}, {"optimizer", optimizer.type()}};
  if (slices > 0) stage["zero_slices"] = slices;
  write_json(step_directory / (stage_name(layout.stage) + ".json"), stage);
  sync_directory(step_directory.string());
}

// Rank 0, once every stage's files are in place: the manifest, then DIR/latest (the commit).
void commit(const fs::path& root, const fs::path& step_directory, const CheckpointLayout& layout, std::int64_t step,
            const LossScaler* scaler) {
  write_json(step_directory / kManifest, manifest_json(layout, step, scaler));
  sync_directory(step_directory.string());
  write_file_atomically((root / kLatest).string(), step_directory.filename().string() + "\n");
  sync_directory(root.string());
}

// Rank 0, after the commit of `step`: keeps it and the keep - 1 newest complete checkpoints before
// it; deletes older ones and unfinished ones before it. Later step directories (of another run
// in the same DIR) are left alone. A failure here only warns: the new checkpoint is committed.
void prune(const fs::path& root, std::int64_t step, int keep) {
  int kept = 1;
  for (const StepDirectory& directory : step_directories(root)) {
    if (directory.step >= step) continue;
    if (directory.complete && kept < keep) {
      ++kept;
      continue;
    }
    std::error_code error;
    fs::remove_all(directory.path, error);
    if (error) spdlog::warn("{}: cannot delete this old checkpoint ({})", directory.path.string(), error.message());
  }
}

}  // namespace

std::string save_training_checkpoint(comm::Communicator& world, const std::string& dir, const CheckpointLayout& layout,
                                     std::int64_t step, const std::vector<NamedParameter>& parameters,
                                     Optimizer& optimizer, bool writer, int keep, const LossScaler* scaler,
                                     const StageTensors* gathered) {
  LOOM_CHECK(keep >= 1, "keep_checkpoints must be at least 1, got ", keep);
  const fs::path root(dir), step_directory = root / step_directory_name(step);
  const bool coordinator = world.rank() == 0;
  std::error_code error;
  const std::string unchanged = fs::exists(root / kLatest, error)
                                    ? "; " + (root / kLatest).string() + " still names the previous checkpoint"
                                    : "; no checkpoint was committed";
  const auto discard = [&] {
    std::error_code error;
    if (coordinator) fs::remove_all(step_directory, error);
  };
  run_phase(world, [&] { if (coordinator) prepare_directory(root, step_directory); });
  const bool slices = gathered && gathered->replicas > 0;
  run_phase(world,
            [&] {
              if (writer || slices) write_stage(step_directory, layout, step, parameters, optimizer, gathered, writer);
            },
            unchanged, discard);
  run_phase(world, [&] { if (coordinator) commit(root, step_directory, layout, step, scaler); },
            unchanged, discard);
  if (coordinator) prune(root, step, keep);
  return step_directory.string();
}

namespace {
// Checkpoints of loom before tied embeddings hold an untied output projection: named, not a bare
// settings mismatch.
void check_ties(const nlohmann::json& manifest, const fs::path& path, const CheckpointLayout& layout) {
  const auto tie = layout.settings.find("tie_embeddings");
  const bool untied_file = manifest.contains("settings") && manifest["settings"].is_object() &&
                           !manifest["settings"].contains("tie_embeddings");
  LOOM_CHECK(tie == layout.settings.end() || tie->second == 0 || !untied_file, path.string(),
             ": written before loom tied the output projection to the word embedding (its projection is its "
             "own parameter); resume it untied: --set tie_embeddings=0");
}

// Checks DIR's manifest against this run, then loads this rank's tensors from whichever stage
// files hold them (checkpoint_reader.h): the writing run's stages, replicas, partition and chunks
// need not be this run's.
void load_stage(ResumePoint& point, const CheckpointLayout& layout, const std::vector<NamedParameter>& parameters,
                Optimizer& optimizer, LossScaler* scaler, const std::map<std::string, std::string>& renames,
                const std::map<std::string, std::int64_t>& offsets) {
  const std::string& dir = point.directory;
  CheckpointReader reader(dir);
  const fs::path manifest_path = reader.manifest_path();
  const nlohmann::json& manifest = reader.manifest();
  detail::expect_field(manifest, manifest_path, "model", layout.model);
  check_ties(manifest, manifest_path, layout);
  detail::expect_field(manifest, manifest_path, "settings", layout.settings);
  detail::expect_field(manifest, manifest_path, "global_batch", layout.global_batch);
  detail::expect_field(manifest, manifest_path, "seed", layout.seed);
  point.step = reader.step();
  const std::int64_t named = step_of_directory(fs::path(dir).filename().string());
  LOOM_CHECK(named < 0 || named == point.step, manifest_path.string(), ": says step ", point.step,
             " in the directory of step ", named);
  read_learning_rate_path(manifest, manifest_path, point);
  check_optimizer(manifest, manifest_path, layout);
  check_precision(manifest, manifest_path, layout);
  if (scaler) restore_loss_scale(manifest, manifest_path, *scaler);
  reader.load(parameters, &optimizer, layout.blocks, layout.seed, renames, offsets);
}

}  // namespace

// The checkpoint --resume DIR means (see ResumePoint).
std::string find_checkpoint(const std::string& dir) {
  const fs::path root(dir);
  struct stat info {};
  if (::stat(root.c_str(), &info) != 0) {
    const int error = errno;
    LOOM_THROW(root.string(), ": cannot open the checkpoint directory (", std::strerror(error),
               "); give a directory that loom train --checkpoint wrote");
  }
  LOOM_CHECK(S_ISDIR(info.st_mode), root.string(), ": a checkpoint is a directory, but this is ", file_kind(info.st_mode));
  std::error_code error;
  const fs::path latest = root / kLatest;
  if (fs::exists(fs::symlink_status(latest, error))) {
    const fs::path directory = root / read_latest(latest);
    LOOM_CHECK(is_complete(directory), latest.string(), ": names ", directory.filename().string(),
               ", which is not a complete checkpoint (it has no ", kManifest, ")");
    return directory.string();
  }
  if (fs::exists(fs::symlink_status(root / kManifest, error))) return root.string();
  for (const StepDirectory& directory : step_directories(root))
    if (directory.complete) return directory.path.string();
  LOOM_THROW(root.string(), ": no checkpoint here (no ", kLatest, ", no ", kManifest,
             ", no complete step-N directory; is this a directory written by loom train --checkpoint?)");
}

ResumePoint load_training_checkpoint(comm::Communicator& world, const std::string& dir, const CheckpointLayout& layout,
                                     const std::vector<NamedParameter>& parameters, Optimizer& optimizer,
                                     LossScaler* scaler, const std::map<std::string, std::string>& renames,
                                     const std::map<std::string, std::int64_t>& offsets) {
  // Every rank learns whether any failed, so that all stop together instead of some waiting in the
  // first pipeline transfer for a stage that gave up.
  ResumePoint point;
  run_phase(world,
            [&] {
              point.directory = find_checkpoint(dir);
              load_stage(point, layout, parameters, optimizer, scaler, renames, offsets);
            });
  // Every rank must have loaded the same checkpoint (DIR must be on a file system they all see).
  const std::vector<std::int64_t> extremes = comm::max_over(world, {point.step, -point.step});
  LOOM_CHECK(extremes[0] == -extremes[1], dir, ": the ranks found checkpoints of different steps (", -extremes[1], " to ",
             extremes[0], "); is the directory on a file system that every rank sees?");
  return point;
}

std::optional<double> checkpoint_learning_rate(const std::string& dir) {
  // A checkpoint that cannot be read gives nothing here: the resume reads it next, on every rank
  // together, and names the problem there (CheckpointReader), once.
  try {
    const CheckpointReader reader(find_checkpoint(dir));
    const nlohmann::json& manifest = reader.manifest();
    if (!manifest.contains("lr")) return std::nullopt;
    return json::number_field(manifest, "lr", reader.manifest_path(), "");
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::int64_t resumed_schedule_start(const ResumePoint& point, LrSchedule::Kind run) {
  return !point.lr_schedule || *point.lr_schedule == run ? point.lr_start : point.step;
}

}  // namespace loom::runtime
