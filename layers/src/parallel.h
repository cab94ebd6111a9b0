// parallel_for for the layers' CPU loops (element-wise math, row kernels): the range is cut into
// chunks of at least `grain` items and run on loom::num_threads() threads, the caller included,
// from a pool that lives for the process. Small ranges, nested calls and calls made while another
// thread holds the pool run inline on the calling thread.
#pragma once

#include <cstdint>
#include <functional>

namespace loom::detail {

void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& body);

}  // namespace loom::detail
