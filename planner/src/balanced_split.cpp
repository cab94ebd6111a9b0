#include "balanced_split.h"

#include <algorithm>
#include <limits>

namespace loom::planner::detail {

std::vector<int> balanced_split(const std::vector<double>& weights, int groups) {
  const int n = static_cast<int>(weights.size());
  std::vector<double> prefix(n + 1, 0);
  for (int l = 0; l < n; ++l) prefix[l + 1] = prefix[l] + weights[l];
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[g][j]: the lightest heaviest group when layers 0..j-1 form g groups; cut[g][j] its last cut.
  std::vector<std::vector<double>> best(groups + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(groups + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int g = 1; g <= groups; ++g) {
    for (int j = g; j <= n; ++j) {
      for (int i = g - 1; i < j; ++i) {
        const double v = std::max(best[g - 1][i], prefix[j] - prefix[i]);
        if (v < best[g][j]) {
          best[g][j] = v;
          cut[g][j] = i;
        }
      }
    }
  }
  std::vector<int> last(groups);
  for (int g = groups, j = n; g >= 1; --g) {
    last[g - 1] = j - 1;
    j = cut[g][j];
  }
  return last;
}

}  // namespace loom::planner::detail
