// `--model NAME --size SIZE --set key=value,...` (train, profile, describe): make_model with the
// input as the overrides, then the model's summary as `loom describe` prints it. The first byte
// picks the preset and the size.
#include <loom/models/model.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto& names = loom::model_names();
  const std::string& name = names[data[0] % names.size()];
  const auto model_size = static_cast<loom::ModelSize>((data[0] / names.size()) % 3);
  loom::fuzz::rejecting_loom_errors([&] {
    const loom::ModelSpec spec = loom::make_model(name, loom::fuzz::as_string(data + 1, size - 1), model_size);
    (void)spec.describe();
    (void)loom::summarize(spec, 1);
  });
  return 0;
}
