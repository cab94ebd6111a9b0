// A committed training checkpoint (one step directory, training_checkpoint.h) read by parameter
// name, so that any layout resumes from it. Every tensor is named by its parameter's full name,
// which starts with its block's global index ("5.attn.qkv.weight", optimizer state
// "optimizer.5.attn.qkv.weight.exp_avg"): a rank of any layout (other stages, replicas, partition
// or chunks than the run that wrote it) finds its tensors in the stage files whose blocks overlap
// its own and reads only those tensors, each checked against its stored checksum.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/layers/checkpoint.h>
#include <loom/layers/layer.h>
#include <loom/layers/optimizer.h>

namespace loom::runtime {

struct Wanted;  // what one load reads (checkpoint_reader.cpp)

using BlockRange = std::pair<std::int64_t, std::int64_t>;  // [first, last)

// One stage file of a checkpoint, as its small JSON describes it.
struct CheckpointStage {
  int stage = 0;
  std::string file;                // the safetensors file's path
  std::vector<BlockRange> blocks;  // the writing run's chunks of this stage
  std::vector<std::string> slice_files;  // ZeRO-1: each replica's slices of the optimizer state
};

class CheckpointReader {
 public:
  // Reads DIRECTORY/manifest.json and every stage's JSON (small files); checks that they belong to
  // one save (format, step). Stage files are opened when first needed.
  explicit CheckpointReader(const std::string& directory);
  ~CheckpointReader();

  const std::string& directory() const { return directory_; }
  const std::string& manifest_path() const { return manifest_path_; }
  std::int64_t step() const { return step_; }
  const nlohmann::json& manifest() const { return manifest_; }
  const std::vector<CheckpointStage>& stages() const { return stages_; }

  // Loads `parameters` (and `optimizer`'s state when given; its step count too) of the blocks
  // `blocks`, from the stage files overlapping them. Missing, misshapen, damaged or unexpected
  // tensors (one in these blocks that `parameters` lacks) are a loom::Error naming the file.
  // `renames`: parameters read under another name (tied copies: copy -> canonical), their
  // optimizer state too. `offsets` (ZeRO-1 slices): the optimizer's state of these parameters is a
  // flat range of the stored tensor starting at this element.
  void load(const std::vector<NamedParameter>& parameters, Optimizer* optimizer, const std::vector<BlockRange>& blocks,
            std::uint64_t seed, const std::map<std::string, std::string>& renames = {},
            const std::map<std::string, std::int64_t>& offsets = {});

  // Every tensor of the checkpoint, stage file by stage file (for inspect and export).
  CheckpointFile& file(std::size_t stage_index);
  // A stage's ZeRO-1 slice file, opened once; its tensors' element ranges (name -> {offset, total}).
  CheckpointFile& slice_file(const std::string& path);
  const std::map<std::string, std::pair<std::int64_t, std::int64_t>>& slice_ranges(const std::string& path);

 private:
  std::string directory_, manifest_path_;
  std::int64_t step_ = 0;
  nlohmann::json manifest_;
  std::vector<CheckpointStage> stages_;
  std::map<std::size_t, std::unique_ptr<CheckpointFile>> open_;
  std::map<std::string, std::unique_ptr<CheckpointFile>> open_slices_;
  std::map<std::string, std::map<std::string, std::pair<std::int64_t, std::int64_t>>> slice_ranges_;
  void read_wanted(const std::vector<std::size_t>& sources, const Wanted& w);
  void check_sources(const std::vector<std::size_t>& sources, const std::set<std::string>& taken, Optimizer* optimizer,
                     const std::vector<BlockRange>& blocks, std::uint64_t seed);
  // Puts a wanted tensor (flat elements [offset, offset + numel)) together from the stages' slice files.
  bool read_from_slices(const std::vector<std::size_t>& sources, const std::string& name, Tensor& target,
                        std::int64_t offset);
};

// The block a checkpoint tensor belongs to: the leading integer of its name (after "optimizer."),
// or -1 when it has none.
std::int64_t block_of_tensor(const std::string& name);

}  // namespace loom::runtime
