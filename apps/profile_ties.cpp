// Ties for a profile (see profile_ties.h).
#include "profile_ties.h"

#include <string>

namespace loom::apps {

namespace {
// A full parameter name starts with its block's global index ("5.1.weight").
int block_of(const std::string& name) { return std::stoi(name.substr(0, name.find('.'))); }
}  // namespace

std::vector<planner::LayerTie> profile_ties(const ModelSpec& spec) {
  if (spec.ties.empty()) return {};
  const ModelSummary summary = summarize(spec, 1);
  std::vector<planner::LayerTie> ties;
  for (std::size_t t = 0; t < spec.ties.size(); ++t)
    ties.push_back({block_of(spec.ties[t].canonical), block_of(spec.ties[t].copy),
                    static_cast<double>(summary.tie_elements.at(t)) * 4});
  return ties;
}

}  // namespace loom::apps
