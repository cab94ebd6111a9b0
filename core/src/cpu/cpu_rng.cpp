// CPU random fills: the same philox:: functions the CUDA kernels call. One Philox block gives four
// 32-bit words, so uniform and bernoulli draw a block per four elements and normal (two words per
// value) a block per two; the values are exactly those of philox::uniform/normal/bernoulli.
#include <loom/core/philox.h>

#include "backend.h"

namespace loom::cpu {

namespace {

// Calls f(i, word) for the stream words [first, first + n) of (seed, key), one block per four words.
template <typename F>
void for_words(std::uint64_t seed, std::uint64_t key, std::uint64_t first, std::uint64_t n, F&& f) {
  std::uint64_t i = 0;
  while (i < n) {
    const std::uint64_t word = first + i;
    const philox::Block b = philox::block(seed, key, word >> 2);
    for (std::uint64_t lane = word & 3; lane < 4 && i < n; ++lane, ++i) f(i, b.v[lane]);
  }
}

template <typename T>
void random_typed(RandomKind kind, T* out, std::int64_t n, std::uint64_t seed, std::uint64_t key, double p0,
                  double p1, std::uint64_t first) {
  const auto count = static_cast<std::uint64_t>(n);
  const float lo = static_cast<float>(p0), hi = static_cast<float>(p1);
  switch (kind) {
    case RandomKind::uniform:
      for_words(seed, key, first, count,
                [&](std::uint64_t i, std::uint32_t w) { out[i] = static_cast<T>(philox::uniform_from_word(w, lo, hi)); });
      break;
    case RandomKind::bernoulli:
      for_words(seed, key, first, count,
                [&](std::uint64_t i, std::uint32_t w) { out[i] = philox::bernoulli_from_word(w, lo) ? T(1) : T(0); });
      break;
    case RandomKind::normal: {
      std::uint32_t u1_bits = 0;
      for_words(seed, key, 2 * first, 2 * count, [&](std::uint64_t i, std::uint32_t w) {
        if ((i & 1) == 0) {
          u1_bits = w;
          return;
        }
        out[i / 2] = static_cast<T>(philox::normal_from_words(u1_bits, w, lo, hi));
      });
      break;
    }
  }
}

}  // namespace

void random(RandomKind kind, Tensor& out, std::uint64_t seed, std::uint64_t key, double p0, double p1,
            std::uint64_t first_index) {
  if (out.dtype() == DType::f32)
    random_typed<float>(kind, out.data<float>(), out.numel(), seed, key, p0, p1, first_index);
  else
    random_typed<double>(kind, out.data<double>(), out.numel(), seed, key, p0, p1, first_index);
}

}  // namespace loom::cpu
