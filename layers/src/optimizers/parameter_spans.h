// The CPU parameters of an optimizer seen as one flat index range, so that one parallel_for cuts
// the whole update into chunks over loom's threads: a large parameter is split across threads and
// many small ones (biases, norms) share a chunk instead of each paying for a pool wake-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace loom::optim {

class ParameterSpans {
 public:
  // sizes[k]: element count of parameter k.
  explicit ParameterSpans(const std::vector<std::int64_t>& sizes);

  // Calls piece(k, begin, end) for pieces [begin, end) of parameter k covering every element of
  // every parameter exactly once, concurrently across loom's threads (pieces never overlap).
  void for_each(const std::function<void(std::size_t, std::int64_t, std::int64_t)>& piece) const;

  std::int64_t total() const { return offsets_.back(); }

 private:
  std::vector<std::int64_t> offsets_;  // offsets_[k] = first flat index of parameter k; back() = total
};

}  // namespace loom::optim
