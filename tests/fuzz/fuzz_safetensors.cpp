// safetensors files (checkpoints, `--resume`, the PyTorch exchange of the tests): load() on a file
// holding the input; the 8-byte header length, the JSON header and the data are all fuzzed.
#include <loom/layers/safetensors.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = loom::fuzz::write_scratch_file("fuzz.safetensors", loom::fuzz::as_string(data, size));
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::safetensors::File file = loom::safetensors::load(path);
    for (const auto& [name, tensor] : file.tensors) (void)file.get(name).numel();
  });
  return 0;
}
