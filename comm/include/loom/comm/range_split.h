// Even splits of a count into consecutive ranges: the chunks of a ring, the shards of the
// hierarchical allreduce, and the rows of a micro-batch that each replica of a stage owns.
// The first `total % parts` parts are one larger, so every split is a pure function of
// (total, parts) that every rank computes identically.
#pragma once

#include <cstdint>
#include <vector>

namespace loom::comm {

struct Range {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  friend bool operator==(const Range&, const Range&) = default;
};

Range even_split(std::int64_t total, int parts, int part);
// The overlap of two ranges (empty when they do not meet).
Range intersect(const Range& a, const Range& b);

// [0, total) cut at offsets: part p is [offsets[p], offsets[p + 1]).
class RangeSplit {
 public:
  explicit RangeSplit(std::vector<std::int64_t> offsets);
  static RangeSplit even(std::int64_t total, int parts);

  int parts() const { return static_cast<int>(offsets_.size()) - 1; }
  std::int64_t total() const { return offsets_.back(); }
  Range part(int p) const { return {offsets_[p], offsets_[p + 1]}; }
  std::int64_t largest_part() const;
  bool uniform() const;  // every part the same size

 private:
  std::vector<std::int64_t> offsets_;
};

}  // namespace loom::comm
