// CPU random fills: the same philox:: functions the CUDA kernels call, on words drawn in runs of
// blocks by philox::for_word_runs (vectorised); uniform and bernoulli take one word per element and
// normal two, so the values are exactly those of philox::uniform/normal/bernoulli.
#include <loom/core/philox.h>

#include "backend.h"

namespace loom::cpu {

namespace {

// Calls f(i, word) for the stream words [first, first + n) of (seed, key), i = 0 .. n - 1 in order.
template <typename F>
void for_words(std::uint64_t seed, std::uint64_t key, std::uint64_t first, std::uint64_t n, F&& f) {
  philox::for_word_runs(seed, key, first, n,
                        [&](std::uint64_t offset, const std::uint32_t* words, std::uint64_t count) {
                          for (std::uint64_t j = 0; j < count; ++j) f(offset + j, words[j]);
                        });
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
