// ParameterSpans (see parameter_spans.h): a chunk [begin, end) of the flat range is mapped back to
// the parameters it overlaps through the prefix sums of their sizes.
#include "optimizers/parameter_spans.h"

#include <algorithm>

#include <loom/core/parallel.h>

namespace loom::optim {

namespace {
// Elements per chunk at least: large enough that a chunk's work (tens of microseconds for Adam)
// outweighs handing it to a thread, small enough that a 100k-element model still uses every thread.
constexpr std::int64_t kGrain = 1 << 15;
}  // namespace

ParameterSpans::ParameterSpans(const std::vector<std::int64_t>& sizes) : offsets_(sizes.size() + 1, 0) {
  for (std::size_t k = 0; k < sizes.size(); ++k) offsets_[k + 1] = offsets_[k] + sizes[k];
}

void ParameterSpans::for_each(const std::function<void(std::size_t, std::int64_t, std::int64_t)>& piece) const {
  parallel_for(total(), kGrain, [&](std::int64_t begin, std::int64_t end) {
    // The last parameter whose first index is <= begin holds `begin` (empty parameters skipped).
    auto k = static_cast<std::size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), begin) - offsets_.begin() - 1);
    for (; k + 1 < offsets_.size() && offsets_[k] < end; ++k) {
      const std::int64_t from = std::max(begin, offsets_[k]), to = std::min(end, offsets_[k + 1]);
      if (from < to) piece(k, from - offsets_[k], to - offsets_[k]);
    }
  });
}

}  // namespace loom::optim
