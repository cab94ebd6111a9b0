#include <loom/comm/range_split.h>

#include <algorithm>

#include <loom/base/error.h>

namespace loom::comm {

Range even_split(std::int64_t total, int parts, int part) {
  LOOM_CHECK(parts > 0 && part >= 0 && part < parts && total >= 0, "even_split: part ", part, " of ", parts, " of ",
             total);
  const std::int64_t base = total / parts;
  const std::int64_t extra = total % parts;
  const std::int64_t begin = part * base + std::min<std::int64_t>(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

Range intersect(const Range& a, const Range& b) {
  const std::int64_t begin = std::max(a.begin, b.begin);
  return {begin, std::max(begin, std::min(a.end, b.end))};
}

RangeSplit::RangeSplit(std::vector<std::int64_t> offsets) : offsets_(std::move(offsets)) {
  LOOM_CHECK(offsets_.size() >= 2 && offsets_.front() == 0, "a partition needs offsets starting at 0");
  LOOM_CHECK(std::is_sorted(offsets_.begin(), offsets_.end()), "partition offsets must not decrease");
}

RangeSplit RangeSplit::even(std::int64_t total, int parts) {
  std::vector<std::int64_t> offsets(parts + 1);
  for (int p = 0; p < parts; ++p) offsets[p] = even_split(total, parts, p).begin;
  offsets[parts] = total;
  return RangeSplit(std::move(offsets));
}

std::int64_t RangeSplit::largest_part() const {
  std::int64_t largest = 0;
  for (int p = 0; p < parts(); ++p) largest = std::max(largest, part(p).size());
  return largest;
}

bool RangeSplit::uniform() const {
  for (int p = 1; p < parts(); ++p)
    if (part(p).size() != part(0).size()) return false;
  return true;
}

}  // namespace loom::comm
