// Even splits and partitions, checked against brute-force enumeration.
#include <catch2/catch.hpp>

#include <loom/comm/range_split.h>
#include <loom/base/error.h>

using loom::comm::even_split;
using loom::comm::intersect;
using loom::comm::RangeSplit;
using loom::comm::Range;

TEST_CASE("even_split covers every item once, in order, sizes differing by at most one") {
  for (std::int64_t total : {0, 1, 2, 7, 8, 13, 1009}) {
    for (int parts = 1; parts <= 9; ++parts) {
      std::int64_t next = 0, smallest = total, largest = 0;
      for (int p = 0; p < parts; ++p) {
        const Range r = even_split(total, parts, p);
        CHECK(r.begin == next);
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
        // The first total % parts parts are the larger ones.
        CHECK(r.size() == total / parts + (p < total % parts ? 1 : 0));
      }
      CHECK(next == total);
      CHECK(largest - smallest <= 1);
    }
  }
}

TEST_CASE("intersect of ranges") {
  CHECK(intersect({0, 5}, {3, 9}) == Range{3, 5});
  CHECK(intersect({0, 5}, {5, 9}).empty());
  CHECK(intersect({4, 6}, {0, 10}) == Range{4, 6});
  CHECK(intersect({7, 9}, {0, 3}).empty());
}

TEST_CASE("RangeSplit from offsets and even partitions") {
  const RangeSplit p({0, 3, 3, 10});
  CHECK(p.parts() == 3);
  CHECK(p.total() == 10);
  CHECK(p.part(1).empty());
  CHECK(p.largest_part() == 7);
  CHECK_FALSE(p.uniform());
  CHECK(RangeSplit::even(12, 4).uniform());
  CHECK(RangeSplit::even(13, 4).part(0) == Range{0, 4});
  CHECK(RangeSplit::even(13, 4).part(3) == Range{10, 13});
  CHECK_THROWS_AS(RangeSplit({1, 2}), loom::Error);
  CHECK_THROWS_AS(RangeSplit({0, 5, 2}), loom::Error);
}
