// The JSON files of a training checkpoint (manifest.json, stage<s>.json): names, formats and the
// checked reading both the writer (training_checkpoint.cpp) and the reader (checkpoint_reader.cpp) use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include <loom/base/error.h>

namespace loom::runtime::detail {

// Version 2 records the writing layout (replicas, every stage's blocks) and per-tensor checksums;
// its tensors are keyed by parameter name, so any layout resumes from it. Version 1 still reads.
constexpr const char* kCheckpointFormat = "loom-train-checkpoint/2";
constexpr const char* kCheckpointFormatV1 = "loom-train-checkpoint/1";
constexpr const char* kManifest = "manifest.json";

inline std::string stage_name(int stage) { return "stage" + std::to_string(stage); }
// ZeRO-1: replica r's slices of stage s's optimizer state, and the metadata key of their ranges
// (a JSON object: tensor name -> [offset, total], elements of the whole tensor seen flat).
inline std::string slice_file_name(int stage, int replica) {
  return stage_name(stage) + ".zero" + std::to_string(replica) + ".safetensors";
}
constexpr const char* kSliceRanges = "loom.zero.ranges";

// A checkpoint JSON file, parsed with a depth limit; every problem names the file.
nlohmann::json read_checkpoint_json(const std::filesystem::path& path);

// The "format" field: version 1 or 2.
void expect_checkpoint_format(const nlohmann::json& value, const std::filesystem::path& path);

// A field that must equal what this run has.
template <typename T>
void expect_field(const nlohmann::json& manifest, const std::filesystem::path& path, const char* field, const T& wanted) {
  LOOM_CHECK(manifest.contains(field), path.string(), ": missing field '", field, "'");
  // An integer field must hold a JSON integer: nlohmann converts a float such as 4e103 to an
  // integer type by a cast, undefined beyond its range (a fuzz finding).
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    LOOM_CHECK(manifest.at(field).is_number_integer(), path.string(), ": field '", field, "' must be an integer");
  T found;
  try {
    found = manifest.at(field).get<T>();
  } catch (const nlohmann::json::exception&) {
    LOOM_THROW(path.string(), ": field '", field, "' has the wrong type");
  }
  LOOM_CHECK(found == wanted, path.string(), ": the checkpoint has ", field, " ", nlohmann::json(found).dump(),
             " but this run has ", nlohmann::json(wanted).dump());
}


}  // namespace loom::runtime::detail
