// IDX files of (Fashion-)MNIST, plain or gzip-compressed: read_idx_file on a file holding the input.
#include "../../models/src/idx_file.h"

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = loom::fuzz::write_scratch_file("fuzz-idx", loom::fuzz::as_string(data, size));
  loom::fuzz::rejecting_loom_errors([&] { (void)loom::read_idx_file(path); });
  return 0;
}
