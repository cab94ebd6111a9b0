// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11):
// a counter-based generator. The value for element i depends only on (seed, stream key, i), so
// any rank generates any parameter's values independently and identically, and CPU and CUDA
// produce the same numbers from these same functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <loom/core/hostdevice.h>

namespace loom::philox {

struct Block {
  std::uint32_t v[4];
};

LOOM_HD void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(product >> 32);
  lo = static_cast<std::uint32_t>(product);
}

// 4 random 32-bit words for counter (c0..c3) under key (k0, k1).
LOOM_HD Block philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                            std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, c0, hi0, lo0);
    mulhilo(kM1, c2, hi1, lo1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// Block `block` of the stream (seed, key): its words 4 block .. 4 block + 3. The counter carries the
// block index (64 bits) and the stream key (64 bits); the Philox key is the seed.
LOOM_HD Block block(std::uint64_t seed, std::uint64_t key, std::uint64_t block) {
  return philox4x32_10(static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                       static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32),
                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// Word `index` of the stream (seed, key): lane index % 4 of block index / 4.
LOOM_HD std::uint32_t word(std::uint64_t seed, std::uint64_t key, std::uint64_t index) {
  return block(seed, key, index >> 2).v[index & 3];
}

// Host only (philox.cpp): the blocks first_block .. first_block + count - 1 of the stream, many at a
// time in SIMD lanes; words[4 i + lane] = block(seed, key, first_block + i).v[lane].
void blocks(std::uint64_t seed, std::uint64_t key, std::uint64_t first_block, int count, std::uint32_t* words);

// Host only: the stream's words [first, first + n) in runs from blocks(); calls
// run(offset, words, count) with words[j] = word(seed, key, first + offset + j) for j < count.
template <typename Run>
void for_word_runs(std::uint64_t seed, std::uint64_t key, std::uint64_t first, std::uint64_t n, Run&& run) {
  constexpr std::uint64_t kRunBlocks = 256;
  std::uint32_t words[4 * kRunBlocks];
  for (std::uint64_t offset = 0; offset < n;) {
    const std::uint64_t at = first + offset, lane = at & 3;
    const std::uint64_t run_blocks = std::min(kRunBlocks, (n - offset + lane + 3) / 4);
    blocks(seed, key, at >> 2, static_cast<int>(run_blocks), words);
    const std::uint64_t count = std::min(n - offset, 4 * run_blocks - lane);
    run(offset, static_cast<const std::uint32_t*>(words + lane), count);
    offset += count;
  }
}

// Uniform in (0, 1]: 24 random bits, never 0 (safe for log in Box-Muller).
LOOM_HD float to_unit_float(std::uint32_t bits) {
  return (static_cast<float>(bits >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

// a * b + c rounded once (a fused multiply-add) on the host and the GPU alike. Written plainly, the
// expression is contracted into an FMA by nvcc and by g++ when the CPU has one (-march=native), but
// rounded twice by a baseline x86-64 build, so the random numbers would depend on the build.
LOOM_HD float multiply_add(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// The value of one uniform on [lo, hi) from one random word.
LOOM_HD float uniform_from_word(std::uint32_t word, float lo, float hi) {
  const float u = to_unit_float(word) - (1.0f / 16777216.0f);  // [0, 1)
  return multiply_add(hi - lo, u, lo);
}

// One normal from two random words: Box-Muller, computed in double so host and device round alike.
LOOM_HD float normal_from_words(std::uint32_t first, std::uint32_t second, float mean, float stddev) {
  const double u1 = to_unit_float(first);
  const double u2 = to_unit_float(second);
  const double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  return multiply_add(stddev, static_cast<float>(z), mean);
}

// 1 with probability p, from one random word.
LOOM_HD bool bernoulli_from_word(std::uint32_t word, float p) {
  return (static_cast<double>(word) + 0.5) * (1.0 / 4294967296.0) < static_cast<double>(p);
}

// Element i of a uniform stream on [lo, hi).
LOOM_HD float uniform(std::uint64_t seed, std::uint64_t key, std::uint64_t i, float lo, float hi) {
  return uniform_from_word(word(seed, key, i), lo, hi);
}

// Element i of a normal stream: from the words 2i and 2i + 1 of the stream.
LOOM_HD float normal(std::uint64_t seed, std::uint64_t key, std::uint64_t i, float mean, float stddev) {
  return normal_from_words(word(seed, key, 2 * i), word(seed, key, 2 * i + 1), mean, stddev);
}

// Element i of a Bernoulli(p) stream: 1 with probability p.
LOOM_HD bool bernoulli(std::uint64_t seed, std::uint64_t key, std::uint64_t i, float p) {
  return bernoulli_from_word(word(seed, key, i), p);
}

}  // namespace loom::philox
