// bf16 and f16 storage conversions (round to nearest even), shared by host and device code.
#pragma once

#include <cstdint>
#include <cstring>

#include <loom/core/hostdevice.h>

namespace loom::half {

LOOM_HD std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
LOOM_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

LOOM_HD std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t nearest_even = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;
  // A select rather than a branch, so that loops over it vectorise.
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : nearest_even);
}
LOOM_HD float bf16_to_float(std::uint16_t h) { return bits_float(static_cast<std::uint32_t>(h) << 16); }

// `condition ? a : b` as masks: GCC turns nested ternaries over mixed float and integer work back
// into branches, and the loops over f16 conversions then do not vectorise.
LOOM_HD std::uint32_t select_bits(bool condition, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(condition);
  return (a & mask) | (b & ~mask);
}

// f32 -> f16, round to nearest even: NaN stays a (quiet) NaN, 65520 and beyond become inf, values
// under 2^-14 become f16 subnormals. Three branch-free candidates and selects, so that loops over
// it vectorise: the normal case rebiases the exponent (127 -> 15) and rounds the 13 dropped bits to
// even; the subnormal case adds 0.5, whose ulp is f16's smallest subnormal 2^-24, so the FPU's own
// round-to-nearest-even leaves the f16 mantissa in the low bits.
LOOM_HD std::uint16_t float_to_f16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t sign = u & 0x80000000u;
  const std::uint32_t magnitude = u ^ sign;
  const std::uint32_t inf_or_nan = select_bits(magnitude > 0x7f800000u, 0x7e00u, 0x7c00u);
  const std::uint32_t subnormal = float_bits(bits_float(magnitude) + 0.5f) - 0x3f000000u;
  const std::uint32_t normal = (magnitude + 0xc8000fffu + ((magnitude >> 13) & 1u)) >> 13;
  const std::uint32_t h = select_bits(magnitude >= 0x47800000u, inf_or_nan,
                                      select_bits(magnitude < 0x38800000u, subnormal, normal));
  return static_cast<std::uint16_t>(h | (sign >> 16));
}
// f16 -> f32, exact, the same way: a normal value rebiases its exponent (15 -> 127), inf and NaN
// keep an all-ones exponent, a subnormal is its mantissa times 2^-24.
LOOM_HD float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t magnitude = h & 0x7fffu;
  const std::uint32_t normal = (magnitude << 13) + 0x38000000u;
  const std::uint32_t inf_or_nan = (magnitude << 13) + 0x70000000u;
  const std::uint32_t subnormal =
      float_bits(static_cast<float>(static_cast<std::int32_t>(magnitude)) * (1.0f / 16777216.0f));
  const std::uint32_t bits =
      select_bits(magnitude >= 0x7c00u, inf_or_nan, select_bits(magnitude < 0x0400u, subnormal, normal));
  return bits_float(sign | bits);
}

}  // namespace loom::half
