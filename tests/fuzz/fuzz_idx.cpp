// IDX files of (Fashion-)MNIST, plain or gzip-compressed: read_idx_file on a file holding the input.
#include "../../models/src/idx_file.h"

#include <cstdlib>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = loom::fuzz::write_scratch_file("fuzz-idx", loom::fuzz::as_string(data, size));
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::IdxFile idx = loom::read_idx_file(path);
    // What the dataset indexes by: the data must hold exactly the elements the dimensions say.
    std::size_t elements = 1;
    for (const std::int64_t dim : idx.dims)
      if (__builtin_mul_overflow(elements, static_cast<std::size_t>(dim), &elements)) std::abort();
    if (elements != idx.data.size()) std::abort();
  });
  return 0;
}
