// The median of timed repeats (the profiler's per-block costs, the benchmarks' figures): the middle
// value, or the mean of the two middle values of an even count.
#pragma once

#include <algorithm>
#include <vector>

namespace loom::apps {

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0.0;
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace loom::apps
