// `--data text:PATH`: open_dataset on a file holding the input (after one byte that picks the
// sequence length, the split and the token task), then every sample read as training does.
#include <vector>

#include <loom/models/dataset.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const std::string path = loom::fuzz::write_scratch_file("fuzz.txt", loom::fuzz::as_string(data + 1, size - 1));
  loom::DataShape shape;
  const std::int64_t seq = 1 + (control & 0x0f);
  const auto task = static_cast<loom::TokenTask>((control >> 4) & 3);
  shape.sample_shape = loom::Shape{task == loom::TokenTask::translate ? 2 * seq : seq};
  shape.input_dtype = loom::DType::i64;
  shape.target_shape = loom::Shape{seq};
  shape.classes = 256 + (control >> 7);
  shape.task = task;
  const auto split = (control & 0x40) ? loom::DatasetSplit::test : loom::DatasetSplit::train;
  loom::fuzz::rejecting_loom_errors([&] {
    const auto dataset = loom::open_dataset("text:" + path, split, shape, 7);
    std::vector<std::int64_t> all;
    for (std::int64_t i = 0; i < dataset->size() && i < 4096; ++i) all.push_back(i);
    loom::Tensor inputs, targets;
    dataset->read(all, inputs, targets);
  });
  return 0;
}
