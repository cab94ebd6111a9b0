// Data files are opened only when they are regular files of a sane size: a FIFO or a device
// (/dev/zero) would block or never end, a directory cannot be read. The regular-file check is
// the one every input of loom uses (loom/base/files.h); data files add a size limit and a hint
// on where the file should come from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include <loom/base/error.h>
#include <loom/base/files.h>

namespace loom {

inline constexpr std::uintmax_t kMaxDataFileBytes = std::uintmax_t{1} << 32;  // 4 GiB

// Throws loom::Error naming the file unless it is a regular file of at most kMaxDataFileBytes;
// `hint` is appended when the file does not exist.
inline void require_data_file(const std::string& path, const std::string& hint = "") {
  std::error_code ec;
  LOOM_CHECK(std::filesystem::exists(path, ec), path, ": cannot open (no such file)", hint);
  check_regular_file(path, "a data file");
  const auto size = std::filesystem::file_size(path, ec);
  LOOM_CHECK(!ec && size <= kMaxDataFileBytes, path, ": ", size, " bytes is more than the ", kMaxDataFileBytes,
             " a data file may have");
}

}  // namespace loom
