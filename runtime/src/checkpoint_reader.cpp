// Reading a training checkpoint by parameter name (see checkpoint_reader.h).
#include <loom/runtime/checkpoint_reader.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include <loom/base/files.h>
#include <loom/base/json_fields.h>
#include <loom/base/json_input.h>

#include "checkpoint_json.h"

namespace loom::runtime {

namespace fs = std::filesystem;

// What one load reads, from the files that overlap its blocks.
struct Wanted {
  std::string name, what;
  Tensor* target;
  std::int64_t offset;  // >= 0: the target is a flat range of the stored tensor from here
};

namespace detail {

nlohmann::json read_checkpoint_json(const fs::path& path) {
  check_regular_file(path.string(), "a checkpoint manifest");
  std::ifstream in(path);
  LOOM_CHECK(in.good(), path.string(), ": cannot open (", std::strerror(errno), ")");
  try {
    return parse_json_depth_limited(in, path.string());
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(path.string(), ": not valid JSON (", e.what(), ")");
  }
}

void expect_checkpoint_format(const nlohmann::json& value, const fs::path& path) {
  const nlohmann::json* format = value.is_object() && value.contains("format") ? &value["format"] : nullptr;
  LOOM_CHECK(format && (*format == kCheckpointFormat || *format == kCheckpointFormatV1), path.string(),
             ": field 'format' must be \"", kCheckpointFormat, "\" (or version 1), got ",
             format ? excerpt(format->dump()) : std::string("nothing"));
}

}  // namespace detail

namespace {

constexpr std::int64_t kMaxBlock = std::int64_t{1} << 40;

std::vector<BlockRange> read_blocks(const nlohmann::json& value, const fs::path& path) {
  LOOM_CHECK(value.contains("blocks") && value["blocks"].is_array(), path.string(), ": missing or bad field 'blocks'");
  std::vector<BlockRange> blocks;
  for (const nlohmann::json& range : value["blocks"]) {
    LOOM_CHECK(range.is_array() && range.size() == 2 && range[0].is_number_integer() && range[1].is_number_integer(),
               path.string(), ": field 'blocks' must hold [first, last) pairs, got ", excerpt(range.dump()));
    const auto first = range[0].get<std::int64_t>(), last = range[1].get<std::int64_t>();
    LOOM_CHECK(0 <= first && first <= last && last <= kMaxBlock, path.string(), ": bad block range ", excerpt(range.dump()));
    blocks.emplace_back(first, last);
  }
  return blocks;
}

bool overlaps(const std::vector<BlockRange>& a, const std::vector<BlockRange>& b) {
  for (const auto& [first, last] : a)
    for (const auto& [f, l] : b)
      if (first < l && f < last) return true;
  return false;
}

bool contains(const std::vector<BlockRange>& ranges, std::int64_t block) {
  return std::any_of(ranges.begin(), ranges.end(), [&](const BlockRange& r) { return r.first <= block && block < r.second; });
}

// `name` with a renamed parameter's prefix replaced ("5.1.weight.exp_avg" -> "0.token.weight.exp_avg").
std::string renamed(const std::string& name, const std::map<std::string, std::string>& renames) {
  for (const auto& [from, to] : renames)
    if (name.rfind(from, 0) == 0 && (name.size() == from.size() || name[from.size()] == '.'))
      return to + name.substr(from.size());
  return name;
}


}  // namespace

std::int64_t block_of_tensor(const std::string& name) {
  const std::string prefix = optimizer_tensor_name("");
  const std::size_t start = name.rfind(prefix, 0) == 0 ? prefix.size() : 0;
  std::int64_t block = 0;
  std::size_t i = start;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i - start < 12; ++i) block = block * 10 + (name[i] - '0');
  return i > start && (i == name.size() || name[i] == '.') ? block : -1;
}

CheckpointReader::CheckpointReader(const std::string& directory)
    : directory_(directory), manifest_path_((fs::path(directory) / detail::kManifest).string()) {
  manifest_ = detail::read_checkpoint_json(manifest_path_);
  const nlohmann::json& manifest = manifest_;
  detail::expect_checkpoint_format(manifest, manifest_path_);
  step_ = json::integer_field(manifest, "step", manifest_path_, "", 0, kMaxBlock);
  const auto stages = json::integer_field(manifest, "stages", manifest_path_, "", 1, 1 << 20);
  for (int s = 0; s < stages; ++s) {
    const fs::path path = fs::path(directory) / (detail::stage_name(s) + ".json");
    const nlohmann::json stage = detail::read_checkpoint_json(path);
    detail::expect_checkpoint_format(stage, path);
    detail::expect_field(stage, path, "stage", s);
    detail::expect_field(stage, path, "step", step_);  // a stage file from another save than the manifest
    const std::string file = detail::stage_name(s) + ".safetensors";
    LOOM_CHECK(stage.contains("file") && stage["file"] == file, path.string(), ": field 'file' must be \"", file,
               "\", got ", stage.contains("file") ? excerpt(stage["file"].dump()) : std::string("nothing"));
    CheckpointStage record{s, (fs::path(directory) / file).string(), read_blocks(stage, path), {}};
    const std::int64_t slices =
        stage.contains("zero_slices") ? json::integer_field(stage, "zero_slices", path.string(), "", 1, 1 << 20) : 0;
    for (int r = 0; r < slices; ++r)
      record.slice_files.push_back((fs::path(directory) / detail::slice_file_name(s, r)).string());
    stages_.push_back(std::move(record));
  }
}

CheckpointReader::~CheckpointReader() = default;

CheckpointFile& CheckpointReader::slice_file(const std::string& path) {
  auto& open = open_slices_[path];
  if (!open) open = std::make_unique<CheckpointFile>(path);
  return *open;
}

const std::map<std::string, std::pair<std::int64_t, std::int64_t>>& CheckpointReader::slice_ranges(const std::string& path) {
  const auto cached = slice_ranges_.find(path);
  if (cached != slice_ranges_.end()) return cached->second;
  const CheckpointFile& file = slice_file(path);
  const auto text = file.metadata().find(detail::kSliceRanges);
  LOOM_CHECK(text != file.metadata().end(), path, ": a ZeRO slice file without ", detail::kSliceRanges, " in its metadata");
  nlohmann::json ranges;
  try {
    ranges = nlohmann::json::parse(text->second);
  } catch (const nlohmann::json::exception&) {
    ranges = nullptr;
  }
  LOOM_CHECK(ranges.is_object(), path, ": metadata ", detail::kSliceRanges, " is not a JSON object");
  auto& table = slice_ranges_[path];
  for (const safetensors::Entry& entry : file.header().entries) {
    const nlohmann::json* range = ranges.contains(entry.name) ? &ranges[entry.name] : nullptr;
    LOOM_CHECK(range && range->is_array() && range->size() == 2 && (*range)[0].is_number_integer() &&
                   (*range)[1].is_number_integer(),
               path, ": no [offset, total] range for '", entry.name, "' in ", detail::kSliceRanges);
    const auto offset = (*range)[0].get<std::int64_t>(), total = (*range)[1].get<std::int64_t>();
    LOOM_CHECK(offset >= 0 && entry.shape.numel() <= total - offset, path, ": '", entry.name, "' has ",
               entry.shape.numel(), " values at offset ", offset, " of a tensor of ", total);
    table[entry.name] = {offset, total};
  }
  return table;
}

bool CheckpointReader::read_from_slices(const std::vector<std::size_t>& sources, const std::string& name, Tensor& target,
                                        std::int64_t offset) {
  const std::pair<std::int64_t, std::int64_t> wanted{offset, offset + target.numel()};
  std::int64_t covered = 0;
  bool any = false;
  Tensor flat = target.reshape(Shape{target.numel()});
  for (const std::size_t s : sources)
    for (const std::string& path : stages_[s].slice_files) {
      CheckpointFile& file = slice_file(path);
      if (!file.has(name)) continue;
      const auto [start, total] = slice_ranges(path).at(name);
      any = true;
      const Tensor piece = file.read(name);
      const std::int64_t begin = std::max(start, wanted.first), end = std::min(start + piece.numel(), wanted.second);
      if (begin >= end) continue;
      Tensor part = flat.slice(begin - offset, end - offset);
      assign_from_checkpoint(part, piece.reshape(Shape{piece.numel()}).slice(begin - start, end - start));
      covered += end - begin;
    }
  LOOM_CHECK(!any || covered == target.numel(), directory_, ": the ZeRO slices of '", name, "' cover ", covered, " of the ",
             target.numel(), " values wanted");
  return any;
}

CheckpointFile& CheckpointReader::file(std::size_t stage_index) {
  auto& open = open_[stage_index];
  if (!open) open = std::make_unique<CheckpointFile>(stages_.at(stage_index).file);
  return *open;
}

namespace {
// The run's step and seed, as the stage file's metadata records them.
void check_stage_file(const CheckpointFile& file, std::int64_t step, std::uint64_t seed, const std::string& manifest) {
  const auto& metadata = file.metadata();
  const auto saved = metadata.find("loom.train.step");
  LOOM_CHECK(saved != metadata.end() && saved->second == std::to_string(step), file.path(), ": taken after step ",
             saved == metadata.end() ? std::string("?") : excerpt(saved->second), " but ", manifest, " says ", step);
  // A stage file of another run at the same step (files written before the seed was recorded pass).
  const auto found = metadata.find("loom.train.seed");
  LOOM_CHECK(found == metadata.end() || found->second == std::to_string(seed), file.path(), ": written by a run with seed ",
             excerpt(found == metadata.end() ? "" : found->second), ", but ", manifest, " and this run have seed ", seed,
             " (a stage file from another run?)");
}
}  // namespace

namespace {
// What a load wants: every parameter, and the optimizer's state (a flat range of the stored tensor
// where `offsets` names its parameter: ZeRO-1 slices), under the names the files use.
std::vector<Wanted> wanted_tensors(const std::vector<NamedParameter>& parameters,
                                   std::vector<std::pair<std::string, Tensor>>& state,
                                   const std::map<std::string, std::string>& renames,
                                   const std::map<std::string, std::int64_t>& offsets) {
  std::vector<Wanted> wanted;
  for (const NamedParameter& p : parameters)
    wanted.push_back({renamed(p.name, renames), "parameter '" + p.name + "'", &p.parameter->value, -1});
  for (auto& [name, tensor] : state) {
    const auto slice = offsets.find(name.substr(0, name.rfind('.')));
    wanted.push_back({optimizer_tensor_name(renamed(name, renames)), "optimizer state '" + name + "'", &tensor,
                      slice == offsets.end() ? -1 : slice->second});
  }
  return wanted;
}
}  // namespace

void CheckpointReader::read_wanted(const std::vector<std::size_t>& sources, const Wanted& w) {
  const auto holder = std::find_if(sources.begin(), sources.end(), [&](std::size_t s) { return file(s).has(w.name); });
  if (holder == sources.end()) {  // ZeRO-1: put together from the replicas' slices
    LOOM_CHECK(read_from_slices(sources, w.name, *w.target, std::max<std::int64_t>(w.offset, 0)), directory_,
               ": no stage file holds ", w.what, " of block ", block_of_tensor(w.name), " (different architecture?)");
    return;
  }
  CheckpointFile& source = file(*holder);
  Tensor value = source.read(w.name);
  if (w.offset >= 0) {  // a slice of the stored tensor, seen flat
    LOOM_CHECK(w.offset + w.target->numel() <= value.numel(), source.path(), ": ", w.what, " has ", value.numel(),
               " values in the file, fewer than its slice [", w.offset, ", ", w.offset + w.target->numel(), ")");
    value = value.reshape(Shape{value.numel()}).slice(w.offset, w.offset + w.target->numel()).reshape(w.target->shape());
  }
  LOOM_CHECK(value.shape() == w.target->shape(), source.path(), ": ", w.what, " has shape ", w.target->shape().str(),
             " in the model but ", value.shape().str(), " in the file");
  assign_from_checkpoint(*w.target, value);
}

// Every file a load read: of this run and step; no tensor of these blocks the model lacks; the
// optimizer's type, and one step count.
void CheckpointReader::check_sources(const std::vector<std::size_t>& sources, const std::set<std::string>& taken,
                                     Optimizer* optimizer, const std::vector<BlockRange>& blocks, std::uint64_t seed) {
  std::vector<CheckpointFile*> files;
  for (const std::size_t s : sources) {
    files.push_back(&file(s));
    for (const std::string& path : stages_[s].slice_files)
      if (open_slices_.count(path)) files.push_back(&slice_file(path));
  }
  std::int64_t steps = -1;
  const std::string prefix = optimizer_tensor_name("");
  for (CheckpointFile* source : files) {
    check_stage_file(*source, step_, seed, manifest_path_);
    for (const safetensors::Entry& entry : source->header().entries) {
      const bool state_tensor = entry.name.rfind(prefix, 0) == 0;
      if ((state_tensor && !optimizer) || !contains(blocks, block_of_tensor(entry.name))) continue;
      // A state tensor belongs to a parameter the model has (whose state this rank may not hold: ZeRO-1).
      const std::string owner = state_tensor ? entry.name.substr(prefix.size(), entry.name.rfind('.') - prefix.size())
                                             : entry.name;
      LOOM_CHECK(taken.count(owner), source->path(), ": the file holds '", entry.name,
                 "' that the model does not have (different architecture?)");
    }
    if (!optimizer) continue;
    LOOM_CHECK(source->optimizer_type() == optimizer->type(), source->path(), ": checkpoint holds ",
               source->optimizer_type(), " state but the optimizer is ", optimizer->type());
    const std::int64_t found = source->optimizer_steps();
    LOOM_CHECK(steps < 0 || steps == found, source->path(), ": the optimizer took ", found, " steps, but ",
               files.front()->path(), " says ", steps);
    steps = found;
  }
  if (optimizer && steps >= 0) optimizer->set_steps(steps);
}

void CheckpointReader::load(const std::vector<NamedParameter>& parameters, Optimizer* optimizer,
                            const std::vector<BlockRange>& blocks, std::uint64_t seed,
                            const std::map<std::string, std::string>& renames,
                            const std::map<std::string, std::int64_t>& offsets) {
  std::vector<std::pair<std::string, Tensor>> state;
  if (optimizer) state = optimizer->state();
  const std::vector<Wanted> wanted = wanted_tensors(parameters, state, renames, offsets);
  std::vector<BlockRange> read_blocks = blocks;  // where the tensors are: a renamed one in its canonical's block
  for (const Wanted& w : wanted) {
    const std::int64_t block = block_of_tensor(w.name);
    if (block >= 0 && !contains(read_blocks, block)) read_blocks.emplace_back(block, block + 1);
  }
  std::vector<std::size_t> sources;  // the stage files this load reads
  for (std::size_t s = 0; s < stages_.size(); ++s)
    if (overlaps(stages_[s].blocks, read_blocks)) sources.push_back(s);
  std::set<std::string> taken;
  for (const Wanted& w : wanted) {
    read_wanted(sources, w);
    taken.insert(w.name);
  }
  check_sources(sources, taken, optimizer, blocks, seed);
}

}  // namespace loom::runtime
