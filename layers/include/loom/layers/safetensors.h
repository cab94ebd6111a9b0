// safetensors files: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the raw little-endian data. The format PyTorch / Hugging Face users know; loom uses it for
// checkpoints and for exchanging tensors with the PyTorch reference scripts of the tests.
// Every malformed file gives a loom::Error naming the file and what is wrong with it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <loom/core/tensor.h>

namespace loom::safetensors {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

struct File {
  std::string path;
  NamedTensors tensors;  // CPU tensors, in the file's data order
  Metadata metadata;

  bool has(const std::string& name) const;
  const Tensor& get(const std::string& name) const;  // throws naming the file and the tensor
};

// Writes host tensors and string metadata (a tensor on a device is an error: copy it to the host
// first, as save_checkpoint does). Names must be unique. The file is written
// as PATH.tmp, flushed to the disk and renamed (loom/base/files.h): PATH is never half-written.
void save(const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});
// Only a regular file is read (a FIFO, a device or a directory is an error naming it).
File load(const std::string& path);

// A file's header alone, checked as load() checks it, for readers that need only some tensors
// (a pipeline stage resuming from another layout's checkpoint reads only the tensors it holds).
struct Entry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // byte range in the data section
};
struct Header {
  std::string path;
  std::vector<Entry> entries;  // in data order
  Metadata metadata;
  std::uint64_t data_start = 0;  // file offset of the data section

  const Entry* find(const std::string& name) const;  // nullptr when absent
};
Header read_header(const std::string& path);
// One tensor of the file `header` was read from (a host tensor).
Tensor read_tensor(const Header& header, const Entry& entry);

// 64-bit FNV-1a over bytes; checkpoints keep it in their metadata to detect corruption.
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash = 0xcbf29ce484222325ull);

}  // namespace loom::safetensors
