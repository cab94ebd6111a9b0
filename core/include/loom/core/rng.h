// Counter-based random tensors. A value depends only on (seed, stream key, element index):
// no generator state, so parameters can be created on any rank in any order and agree.
// `first_index` shifts the element index, so a slice of a logical stream (e.g. the rows of one
// micro-batch, at their global sample positions) draws exactly the values the whole would.
#pragma once

#include <cstdint>
#include <string_view>

#include <loom/core/tensor.h>

namespace loom::rng {

// Stable 64-bit stream key from parts (FNV-1a over the text and the integers).
std::uint64_t stream_key(std::string_view name, std::uint64_t a = 0, std::uint64_t b = 0);

// Fill `out` (f32 or f64, any device) in place.
void uniform(Tensor& out, std::uint64_t seed, std::uint64_t key, double lo, double hi,
             std::uint64_t first_index = 0);
void normal(Tensor& out, std::uint64_t seed, std::uint64_t key, double mean, double stddev,
            std::uint64_t first_index = 0);
// 1 with probability p, else 0.
void bernoulli(Tensor& out, std::uint64_t seed, std::uint64_t key, double p, std::uint64_t first_index = 0);

}  // namespace loom::rng
