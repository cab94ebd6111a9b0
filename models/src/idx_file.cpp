#include "idx_file.h"

#include <zlib.h>

#include <loom/base/error.h>

#include "input_file.h"

namespace loom {

IdxFile read_idx_file(const std::string& path) {
  require_data_file(path, " (install dataset-fashion-mnist or set LOOM_FASHION_MNIST_DIR)");
  gzFile file = gzopen(path.c_str(), "rb");  // reads plain files too
  LOOM_CHECK(file != nullptr, path, ": cannot open (install dataset-fashion-mnist or set LOOM_FASHION_MNIST_DIR)");
  std::vector<std::uint8_t> bytes;
  std::uint8_t buffer[1 << 16];
  int got = 0;
  while ((got = gzread(file, buffer, sizeof buffer)) > 0 && bytes.size() <= kMaxDataFileBytes)
    bytes.insert(bytes.end(), buffer, buffer + got);
  const bool failed = got < 0;
  gzclose(file);
  LOOM_CHECK(!failed, path, ": corrupt gzip data");
  LOOM_CHECK(bytes.size() <= kMaxDataFileBytes, path, ": decompresses to more than ", kMaxDataFileBytes, " bytes");
  LOOM_CHECK(bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0, path, ": not an IDX file (bad magic number)");
  LOOM_CHECK(bytes[2] == 0x08, path, ": IDX element type 0x", std::hex, int(bytes[2]), " is not unsigned byte");
  const int rank = bytes[3];
  LOOM_CHECK(rank >= 1 && rank <= 4 && bytes.size() >= 4u + 4u * rank, path, ": truncated IDX header");
  IdxFile idx;
  std::size_t count = 1;
  for (int d = 0; d < rank; ++d) {
    const std::uint8_t* p = bytes.data() + 4 + 4 * d;
    const std::int64_t dim = (std::int64_t{p[0]} << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
    // Checked before multiplying: four dimensions of 65536 would wrap the count to 0.
    LOOM_CHECK(dim == 0 || count <= kMaxDataFileBytes / static_cast<std::size_t>(dim), path, ": IDX dimension ", d,
               " of ", dim, " makes more than ", kMaxDataFileBytes, " elements");
    idx.dims.push_back(dim);
    count *= static_cast<std::size_t>(dim);
  }
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(rank);
  LOOM_CHECK(bytes.size() == header + count, path, ": expected ", count, " data bytes after the header, found ",
             bytes.size() - header);
  idx.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return idx;
}

}  // namespace loom
