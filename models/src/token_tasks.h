// The token tasks of dataset.h (masked, permutation, translate) over a next-token stream.
#pragma once

#include <memory>

#include <loom/models/dataset.h>

namespace loom {

// The stream the task reads: sequences of `expected`'s length (half of it for translate).
DataShape token_stream_shape(const DataShape& expected);
// `stream` (opened with token_stream_shape) seen through expected.task.
std::unique_ptr<Dataset> with_token_task(std::unique_ptr<Dataset> stream, const DataShape& expected,
                                         DatasetSplit split, std::uint64_t seed);

}  // namespace loom
