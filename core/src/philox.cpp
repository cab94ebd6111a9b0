// philox::blocks, the host's many-blocks Philox 4x32-10: the rounds of philox4x32_10 applied to
// kLanes consecutive counters at once, laid out so that the compiler vectorises across blocks.
// The results are those of philox::block (same counter and key layout).
#include <loom/core/philox.h>

namespace loom::philox {

void blocks(std::uint64_t seed, std::uint64_t key, std::uint64_t first_block, int count, std::uint32_t* words) {
  // 32-bit values held in 64-bit lanes: each 32x32->64 product is then one vector multiply of the
  // low halves (pmuludq; vpmullq with AVX-512DQ), which GCC only finds in this form (8x faster than
  // 32-bit lanes).
  constexpr int kLanes = 32;
  constexpr std::uint64_t kLow = 0xFFFFFFFFu;
  constexpr std::uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
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
        const std::uint64_t product0 = kM0 * (c0[l] & kLow), product1 = kM1 * (c2[l] & kLow);
        const std::uint64_t next0 = (product1 >> 32) ^ c1[l] ^ k0, next2 = (product0 >> 32) ^ c3[l] ^ k1;
        c0[l] = next0;
        c1[l] = product1 & kLow;
        c2[l] = next2;
        c3[l] = product0 & kLow;
      }
      k0 = (k0 + kW0) & kLow;
      k1 = (k1 + kW1) & kLow;
    }
    const int filled = count - start < kLanes ? count - start : kLanes;
    for (int l = 0; l < filled; ++l) {
      std::uint32_t* out = words + 4 * (start + l);
      out[0] = static_cast<std::uint32_t>(c0[l]);
      out[1] = static_cast<std::uint32_t>(c1[l]);
      out[2] = static_cast<std::uint32_t>(c2[l]);
      out[3] = static_cast<std::uint32_t>(c3[l]);
    }
  }
}

}  // namespace loom::philox
