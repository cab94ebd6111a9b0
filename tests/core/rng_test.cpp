// Counter-based RNG: known-answer vectors, independence from the generator and from slicing,
// distribution moments, and the host's vectorised blocks against the scalar words.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <loom/core/philox.h>
#include <loom/core/rng.h>

using namespace loom;

TEST_CASE("Philox4x32-10 matches the published known-answer vectors", "[rng]") {
  // Salmon et al., Random123 kat_vectors: philox4x32 10 rounds.
  auto zero = philox::philox4x32_10(0, 0, 0, 0, 0, 0);
  CHECK(zero.v[0] == 0x6627e8d5u);
  CHECK(zero.v[1] == 0xe169c58du);
  CHECK(zero.v[2] == 0xbc57ac4cu);
  CHECK(zero.v[3] == 0x9b00dbd8u);
  auto ones = philox::philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  CHECK(ones.v[0] == 0x408f276du);
  CHECK(ones.v[1] == 0x41c83b0eu);
  CHECK(ones.v[2] == 0xa20bc7c6u);
  CHECK(ones.v[3] == 0x6d5451fdu);
  auto pi = philox::philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.v[0] == 0xd16cfe09u);
  CHECK(pi.v[1] == 0x94fdccebu);
  CHECK(pi.v[2] == 0x5001e420u);
  CHECK(pi.v[3] == 0x24126ea1u);
}

TEST_CASE("a value depends only on (seed, key, index)", "[rng]") {
  const std::uint64_t key = rng::stream_key("blocks.3.attn.qkv.weight", 3);
  Tensor whole = Tensor::empty({1000});
  rng::normal(whole, 42, key, 0.0, 1.0);
  // Two independent generators, each making a part at its offset, agree with the whole.
  Tensor first = Tensor::empty({300}), second = Tensor::empty({700});
  rng::normal(second, 42, key, 0.0, 1.0, 300);
  rng::normal(first, 42, key, 0.0, 1.0, 0);
  const auto w = whole.to_float_vector(), a = first.to_float_vector(), b = second.to_float_vector();
  for (int i = 0; i < 300; ++i) REQUIRE(a[i] == w[i]);
  for (int i = 0; i < 700; ++i) REQUIRE(b[i] == w[300 + i]);
  // A different key or seed gives different values.
  Tensor other = Tensor::empty({1000});
  rng::normal(other, 42, rng::stream_key("blocks.3.attn.qkv.bias", 3), 0.0, 1.0);
  CHECK(other.to_float_vector() != w);
  rng::normal(other, 43, key, 0.0, 1.0);
  CHECK(other.to_float_vector() != w);
  CHECK(rng::stream_key("x", 1) != rng::stream_key("x", 2));
  CHECK(rng::stream_key("x", 1, 5) == rng::stream_key("x", 1, 5));
}

TEST_CASE("uniform, normal and bernoulli have the right moments", "[rng]") {
  const int n = 200000;
  Tensor u = Tensor::empty({n}, DType::f64), z = Tensor::empty({n}, DType::f64), b = Tensor::empty({n});
  rng::uniform(u, 7, 1, -2.0, 4.0);
  rng::normal(z, 7, 2, 1.0, 3.0);
  rng::bernoulli(b, 7, 3, 0.3);
  double su = 0, smin = 1e9, smax = -1e9, sz = 0, szz = 0, sb = 0;
  const auto vu = u.to_double_vector(), vz = z.to_double_vector(), vb = b.to_double_vector();
  for (int i = 0; i < n; ++i) {
    su += vu[i];
    smin = std::min(smin, vu[i]);
    smax = std::max(smax, vu[i]);
    sz += vz[i];
    szz += vz[i] * vz[i];
    sb += vb[i];
    REQUIRE((vb[i] == 0.0 || vb[i] == 1.0));
  }
  CHECK(smin >= -2.0);
  CHECK(smax < 4.0);
  CHECK(su / n == Approx(1.0).margin(0.02));
  const double mean = sz / n, var = szz / n - mean * mean;
  CHECK(mean == Approx(1.0).margin(0.03));
  CHECK(std::sqrt(var) == Approx(3.0).epsilon(0.01));
  CHECK(sb / n == Approx(0.3).margin(0.005));
  CHECK_THROWS_WITH(rng::bernoulli(b, 1, 1, 1.5), Catch::Contains("outside [0, 1]"));
  Tensor ints = Tensor::empty({3}, DType::i32);
  CHECK_THROWS_WITH(rng::uniform(ints, 1, 1, 0, 1), Catch::Contains("f32 or f64"));
}

// The rounding every build and the GPU share (philox.h, multiply_add): (hi - lo) * u + lo rounded
// once, here computed exactly in double (the product of two floats and its sum with lo fit in 53
// bits for these values) and rounded to float. Rounding the product first (a baseline x86-64
// build of the plain expression) differs for some words, so this test tells the two apart.
TEST_CASE("uniform_from_word rounds (hi - lo) * u + lo once", "[rng]") {
  const float lo = 0.1f, hi = 0.7f;  // a span that is not a power of two: the product is inexact
  int twice_differs = 0;
  for (std::uint32_t i = 0; i < 100000; ++i) {
    const std::uint32_t word = philox::word(7, 3, i);
    const float u = philox::to_unit_float(word) - (1.0f / 16777216.0f);
    const float span = hi - lo;
    const auto once = static_cast<float>(static_cast<double>(span) * static_cast<double>(u) + static_cast<double>(lo));
    REQUIRE(philox::uniform_from_word(word, lo, hi) == once);
    volatile float product = span * u;  // volatile: rounded to float, never contracted
    if (product + lo != once) ++twice_differs;
  }
  CHECK(twice_differs > 0);
}

// philox::blocks (the host's vectorised Philox, 32 blocks at a time) against philox::word: counts
// that end inside a group of lanes, and runs whose block index crosses 2^32 (the counter's second
// word). for_word_runs: a first word inside a block and runs of whole tiles and a remainder.
TEST_CASE("philox::blocks and for_word_runs give philox::word's words", "[rng]") {
  struct Run {
    std::uint64_t seed, key, first_block;
    int count;
  };
  const Run runs[] = {{0, 0, 0, 1},
                      {42, 7, 3, 33},
                      {~0ull, 1ull << 40, (1ull << 32) - 20, 45},
                      {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, (3ull << 32) - 1, 100},
                      {5, ~0ull, (1ull << 61) + 7, 64}};
  for (const Run& r : runs) {
    std::vector<std::uint32_t> words(4 * static_cast<std::size_t>(r.count));
    philox::blocks(r.seed, r.key, r.first_block, r.count, words.data());
    for (std::size_t i = 0; i < words.size(); ++i) {
      INFO("seed " << r.seed << " key " << r.key << " block " << r.first_block << " + " << i / 4);
      REQUIRE(words[i] == philox::word(r.seed, r.key, 4 * r.first_block + i));
    }
  }
  const std::uint64_t first = 4 * ((1ull << 32) - 300) + 3, n = 2500;
  std::uint64_t next = 0;
  philox::for_word_runs(9, 4, first, n, [&](std::uint64_t offset, const std::uint32_t* words, std::uint64_t count) {
    REQUIRE(offset == next);
    for (std::uint64_t j = 0; j < count; ++j) REQUIRE(words[j] == philox::word(9, 4, first + offset + j));
    next += count;
  });
  CHECK(next == n);
}
