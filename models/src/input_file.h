// Data files are opened only when they are regular files of a sane size: a FIFO or a device
// (/dev/zero) would block or never end, a directory cannot be read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include <loom/core/error.h>

namespace loom {

inline constexpr std::uintmax_t kMaxDataFileBytes = std::uintmax_t{1} << 32;  // 4 GiB

// Throws loom::Error naming the file unless it is a regular file of at most kMaxDataFileBytes.
inline void require_data_file(const std::string& path, const std::string& hint = "") {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  LOOM_CHECK(!ec && std::filesystem::exists(status), path, ": cannot open (no such file)", hint);
  LOOM_CHECK(std::filesystem::is_regular_file(status), path, ": not a regular file (a directory, FIFO or device)");
  const auto size = std::filesystem::file_size(path, ec);
  LOOM_CHECK(!ec && size <= kMaxDataFileBytes, path, ": ", size, " bytes is more than the ", kMaxDataFileBytes,
             " a data file may have");
}

}  // namespace loom
