// Shared helpers for the comm tests: deterministic inputs any rank can regenerate for any other
// rank (so each rank builds the reference from all ranks' inputs), and the node layouts to try.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::comm::testing {

inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A value in [-1, 1) that depends only on (rank, index, salt).
inline double input_value(int rank, std::int64_t index, std::uint64_t salt) {
  const std::uint64_t bits = mix(mix(salt * 1000003ULL + static_cast<std::uint64_t>(rank)) + static_cast<std::uint64_t>(index));
  return static_cast<double>(bits >> 11) / static_cast<double>(1ULL << 52) - 1.0;
}

// A multiple of 2^-20 in [-1, 1): sums of a few of these are exact in float, in any order.
inline double dyadic_value(int rank, std::int64_t index, std::uint64_t salt) {
  const std::uint64_t bits = mix(mix(salt * 7919ULL + static_cast<std::uint64_t>(rank)) + static_cast<std::uint64_t>(index));
  return static_cast<double>(static_cast<std::int64_t>(bits >> 43) - (1 << 20)) / (1 << 20);
}

// Node layouts to run on a world of `size` ranks: one node, every rank its own node, blocks of
// two, and uneven nodes.
inline std::vector<std::string> node_layouts(int size) {
  std::vector<std::string> layouts{std::to_string(size)};
  if (size >= 2) layouts.push_back("1");
  if (size >= 4) layouts.push_back(size % 2 == 0 ? std::to_string(size / 2) : "2");
  if (size == 3) layouts.push_back("2,1");
  if (size == 4) layouts.push_back("3,1");
  if (size == 8) layouts.push_back("3,3,2");
  return layouts;
}

}  // namespace loom::comm::testing
