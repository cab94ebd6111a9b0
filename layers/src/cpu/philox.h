// Philox 4x32-10 words for runs of consecutive blocks, laid out so the compiler vectorises across
// blocks (SIMD lanes), with results identical to philox::word (same counter and key layout:
// counter = (block lo, block hi, stream key lo, stream key hi), key = seed).
#pragma once

#include <cstdint>

namespace loom::detail {

// words[4 * i + lane] = philox::word(seed, key, 4 * (first_block + i) + lane) for i < count.
inline void philox_words(std::uint64_t seed, std::uint64_t key, std::uint64_t first_block, int count,
                         std::uint32_t* words) {
  // 32-bit values held in 64-bit lanes: the 32x32->64 products then map onto one vector multiply
  // of the low halves (vpmuludq), which GCC only finds in this form (8x faster than uint32 lanes).
  constexpr int kLanes = 32;
  constexpr std::uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kLow = 0xFFFFFFFFu;
  constexpr std::uint64_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int start = 0; start < count; start += kLanes) {
    std::uint64_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const std::uint64_t block = first_block + static_cast<std::uint64_t>(start + l);
      c0[l] = block & kLow;
      c1[l] = block >> 32;
      c2[l] = key & kLow;
      c3[l] = key >> 32;
    }
    std::uint64_t k0 = seed & kLow, k1 = seed >> 32;
    for (int round = 0; round < 10; ++round) {
      for (int l = 0; l < kLanes; ++l) {
        const std::uint64_t p0 = kM0 * (c0[l] & kLow);
        const std::uint64_t p1 = kM1 * (c2[l] & kLow);
        const std::uint64_t n0 = (p1 >> 32) ^ c1[l] ^ k0;
        const std::uint64_t n2 = (p0 >> 32) ^ c3[l] ^ k1;
        c0[l] = n0;
        c1[l] = p1 & kLow;
        c2[l] = n2;
        c3[l] = p0 & kLow;
      }
      k0 = (k0 + kW0) & kLow;
      k1 = (k1 + kW1) & kLow;
    }
    const int valid = count - start < kLanes ? count - start : kLanes;
    for (int l = 0; l < valid; ++l) {
      std::uint32_t* w = words + 4 * (start + l);
      w[0] = static_cast<std::uint32_t>(c0[l]);
      w[1] = static_cast<std::uint32_t>(c1[l]);
      w[2] = static_cast<std::uint32_t>(c2[l]);
      w[3] = static_cast<std::uint32_t>(c3[l]);
    }
  }
}

}  // namespace loom::detail
