// Reader for the IDX format of (Fashion-)MNIST, gzip-compressed or not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

struct IdxFile {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;  // unsigned bytes (the only element type these files use)
};

// Throws loom::Error naming the file on a missing, truncated or malformed file.
IdxFile read_idx_file(const std::string& path);

}  // namespace loom
