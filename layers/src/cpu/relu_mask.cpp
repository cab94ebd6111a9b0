// The ReLU bit mask (relu_mask.h): AVX-512 compares and masked moves where the compiler targets
// AVX-512 (LOOM_NATIVE on these machines), a plain loop elsewhere and for a last partial word.
#include "cpu/relu_mask.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace loom::detail::relu_mask {

namespace {

std::uint32_t pack_word(const float* y, std::int64_t count) {
  std::uint32_t bits = 0;
  for (std::int64_t b = 0; b < count; ++b) bits |= static_cast<std::uint32_t>(y[b] > 0.0f) << b;
  return bits;
}

void select_word(std::uint32_t bits, const float* g, float* dx, std::int64_t count) {
  for (std::int64_t b = 0; b < count; ++b) dx[b] = (bits >> b) & 1u ? g[b] : 0.0f;
}

}  // namespace

void pack_positive(const float* y, std::uint32_t* mask, std::int64_t n) {
  const std::int64_t full = n / kBitsPerWord;
  for (std::int64_t w = 0; w < full; ++w) {
    const float* p = y + w * kBitsPerWord;
#if defined(__AVX512F__)
    const __m512 zero = _mm512_setzero_ps();
    const std::uint32_t low = _mm512_cmp_ps_mask(_mm512_loadu_ps(p), zero, _CMP_GT_OQ);
    const std::uint32_t high = _mm512_cmp_ps_mask(_mm512_loadu_ps(p + 16), zero, _CMP_GT_OQ);
    mask[w] = low | (high << 16);
#else
    mask[w] = pack_word(p, kBitsPerWord);
#endif
  }
  if (full * kBitsPerWord < n) mask[full] = pack_word(y + full * kBitsPerWord, n - full * kBitsPerWord);
}

void select(const std::uint32_t* mask, const float* g, float* dx, std::int64_t n) {
  const std::int64_t full = n / kBitsPerWord;
  for (std::int64_t w = 0; w < full; ++w) {
    const std::int64_t at = w * kBitsPerWord;
#if defined(__AVX512F__)
    const auto low = static_cast<__mmask16>(mask[w]), high = static_cast<__mmask16>(mask[w] >> 16);
    _mm512_storeu_ps(dx + at, _mm512_maskz_mov_ps(low, _mm512_loadu_ps(g + at)));
    _mm512_storeu_ps(dx + at + 16, _mm512_maskz_mov_ps(high, _mm512_loadu_ps(g + at + 16)));
#else
    select_word(mask[w], g + at, dx + at, kBitsPerWord);
#endif
  }
  if (full * kBitsPerWord < n)
    select_word(mask[full], g + full * kBitsPerWord, dx + full * kBitsPerWord, n - full * kBitsPerWord);
}

}  // namespace loom::detail::relu_mask
