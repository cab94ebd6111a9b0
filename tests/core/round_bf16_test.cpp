// ops::round_to_bf16_, the one rounding rule of bf16 training, against
// PyTorch 1.13's torch.float32 -> torch.bfloat16 cast: a table of bit patterns
// (ties to even, carries into the exponent, overflow to inf, inf, subnormals,
// signed zero) whose expected bits torch printed, run live through
// LOOM_TORCH_PYTHON when that Python has torch; and 200,000 random f32 bit
// patterns against a second formulation of round-to-nearest-even written here
// in double arithmetic. And round_to_(x, f16), fp16 training's rule, against a reference in double.
#include <loom/core/half.h>
#include <loom/core/ops.h>

#include <algorithm>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

using namespace loom;

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<std::uint32_t> rounded_by_loom(const std::vector<std::uint32_t>& bits) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(bits.size())});
  for (std::size_t i = 0; i < bits.size(); ++i) t.data<float>()[i] = from_bits(bits[i]);
  ops::round_to_bf16_(t);
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < bits.size(); ++i) out.push_back(to_bits(t.data<float>()[i]));
  return out;
}

// Input bits -> the bf16 bits torch 1.13 gives
// (torch.tensor([x]).to(torch.bfloat16).view(torch.int16)).
struct Case {
  std::uint32_t input;
  std::uint16_t torch_bf16;
  const char* what;
};
const Case kCases[] = {
    {0x3f800000u, 0x3f80, "1.0 exact"},
    {0x3f808000u, 0x3f80, "tie, even below: down"},
    {0x3f818000u, 0x3f82, "tie, odd below: up"},
    {0x3f808001u, 0x3f81, "just above the tie: up"},
    {0x3f807fffu, 0x3f80, "just below the tie: down"},
    {0xbf808000u, 0xbf80, "negative tie: down in magnitude"},
    {0x3fff8000u, 0x4000, "tie carrying into the exponent"},
    {0x7f7f7fffu, 0x7f7f, "largest value that stays finite"},
    {0x7f7f8000u, 0x7f80, "tie at the top: overflow to inf"},
    {0x7f7fffffu, 0x7f80, "largest f32: overflow to inf"},
    {0xff7fffffu, 0xff80, "most negative f32: -inf"},
    {0x7f800000u, 0x7f80, "inf"},
    {0xff800000u, 0xff80, "-inf"},
    {0x00000001u, 0x0000, "smallest subnormal: to zero"},
    {0x00008000u, 0x0000, "subnormal tie, even below: zero"},
    {0x00018000u, 0x0002, "subnormal tie, odd below: up"},
    {0x00008001u, 0x0001, "subnormal above the tie: smallest bf16 subnormal"},
    {0x807fffffu, 0x8080, "largest negative subnormal: to -smallest normal"},
    {0x00000000u, 0x0000, "+0"},
    {0x80000000u, 0x8000, "-0"},
    {0x40490fdbu, 0x4049, "pi"},
};

// Round to nearest, ties to even, from the two bf16 neighbours of a finite x,
// compared in double.
std::uint32_t reference_round(std::uint32_t u) {
  const std::uint32_t below = u & 0xffff0000u;   // toward zero
  const std::uint32_t above = below + 0x10000u;  // away from zero (may become inf: exact in double)
  const double x = std::fabs(static_cast<double>(from_bits(u)));
  const double low = std::fabs(static_cast<double>(from_bits(below)));
  const double high =
      (above & 0x7fffffffu) == 0x7f800000u ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(from_bits(above)));
  if (x - low < high - x) return below;
  if (x - low > high - x) return above;
  return (below & 0x10000u) ? above : below;
}

// The cases' expected bits as torch computes them now, or empty when no Python
// with torch runs.
std::vector<std::uint16_t> torch_now() {
  const auto dir = std::filesystem::path(LOOM_BINARY_DIR) / "tests" / "core";
  std::filesystem::create_directories(dir);
  const auto script = dir / "round_bf16_reference.py", out = dir / "round_bf16_reference.txt";
  {
    std::ofstream py(script);
    py << "import struct, sys, torch\nbits = [";
    for (const Case& c : kCases) py << c.input << ",";
    py << "]\nx = torch.tensor([struct.unpack('<f', struct.pack('<I', b))[0] "
          "for b in bits], dtype=torch.float32)\n"
          "print(' '.join(str(v & 0xffff) for v in "
          "x.to(torch.bfloat16).view(torch.int16).tolist()))\n";
  }
  std::filesystem::remove(out);
  const std::string command =
      std::string(LOOM_TORCH_PYTHON) + " " + script.string() + " > " + out.string() + " 2>/dev/null";
  if (std::system(command.c_str()) != 0) return {};
  std::ifstream in(out);
  std::vector<std::uint16_t> values;
  for (unsigned v; in >> v;) values.push_back(static_cast<std::uint16_t>(v));
  return values;
}

}  // namespace

TEST_CASE("round_to_bf16_ rounds as torch.bfloat16 does", "[ops][bf16]") {
  std::vector<std::uint32_t> inputs;
  for (const Case& c : kCases) inputs.push_back(c.input);
  const std::vector<std::uint32_t> rounded = rounded_by_loom(inputs);
  const std::vector<std::uint16_t> torch = torch_now();
  if (torch.empty())
    WARN("no Python with torch at " << LOOM_TORCH_PYTHON << ": only the recorded torch bits are checked");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    INFO(kCases[i].what << ": input 0x" << std::hex << inputs[i] << ", loom 0x" << rounded[i]);
    CHECK(rounded[i] == static_cast<std::uint32_t>(kCases[i].torch_bf16) << 16);
    if (!torch.empty()) CHECK(rounded[i] == static_cast<std::uint32_t>(torch.at(i)) << 16);
  }
}

TEST_CASE("round_to_bf16_ keeps NaN a NaN", "[ops][bf16]") {
  // torch 1.13 gives every NaN the bits 0xffff; loom keeps the sign and sets
  // the quiet bit. Both are NaN, which is all training needs.
  const std::vector<std::uint32_t> rounded = rounded_by_loom({0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fffffffu});
  for (std::uint32_t r : rounded) {
    CHECK(std::isnan(from_bits(r)));
    CHECK((r & 0xffffu) == 0);
  }
}

TEST_CASE("round_to_bf16_ is round to nearest even on random bit patterns", "[ops][bf16]") {
  std::mt19937 random(7);
  std::vector<std::uint32_t> inputs;
  while (inputs.size() < 200000) {
    const std::uint32_t u = static_cast<std::uint32_t>(random());
    if ((u & 0x7f800000u) != 0x7f800000u) inputs.push_back(u);  // finite
  }
  const std::vector<std::uint32_t> rounded = rounded_by_loom(inputs);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) wrong += rounded[i] != reference_round(inputs[i]);
  CHECK(wrong == 0);
  // Rounding twice changes nothing (block outputs that are already bf16 pass
  // unchanged).
  CHECK(rounded_by_loom(rounded) == rounded);
}

TEST_CASE("round_to_bf16_ wants an f32 tensor", "[ops][bf16]") {
  Tensor d = Tensor::zeros({3}, DType::f64);
  CHECK_THROWS_WITH(ops::round_to_bf16_(d), Catch::Contains("round_to_bf16_: expected an f32 tensor, got f64"));
}

// f16, the rounding rule of fp16 training: round_to_(x, f16) against round to nearest even written
// here in double (the quantum of x's binade, 2^-24 below 2^-14; beyond 65504 is inf), on 200,000
// random f32 values whose exponents span f16's range and past it on both sides.
namespace {
double f16_reference(double x) {
  const double magnitude = std::fabs(x);
  if (magnitude == 0) return x;
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = m 2^exponent, m in [0.5, 1)
  const double quantum = std::ldexp(1.0, std::max(exponent - 1, -14) - 10);
  double rounded = std::nearbyint(magnitude / quantum) * quantum;  // ties to even
  if (rounded > 65504) rounded = INFINITY;
  return std::copysign(rounded, x);
}
}  // namespace

TEST_CASE("round_to_(f16) is round to nearest even, with f16's subnormals and overflow", "[ops][f16]") {
  std::mt19937 random(11);
  std::vector<std::uint32_t> inputs;
  while (inputs.size() < 200000) {
    const std::uint32_t sign = static_cast<std::uint32_t>(random() & 1u) << 31;
    const std::uint32_t exponent = 127 - 30 + static_cast<std::uint32_t>(random() % 50);  // 2^-30 .. 2^19
    inputs.push_back(sign | exponent << 23 | (static_cast<std::uint32_t>(random()) & 0x7fffffu));
  }
  for (const float special : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f})
    inputs.push_back(to_bits(special));
  Tensor t = Tensor::empty({static_cast<std::int64_t>(inputs.size())});
  for (std::size_t i = 0; i < inputs.size(); ++i) t.data<float>()[i] = from_bits(inputs[i]);
  ops::round_to_(t, DType::f16);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const double want = f16_reference(from_bits(inputs[i]));
    const double got = t.data<float>()[i];
    wrong += !(got == want && std::signbit(got) == std::signbit(want));
  }
  CHECK(wrong == 0);
  const std::vector<double> once = t.to_double_vector();
  ops::round_to_(t, DType::f16);  // f16 values pass unchanged
  CHECK(t.to_double_vector() == once);
  CHECK_THROWS_WITH(ops::round_to_(t, DType::i32), Catch::Contains("rounds to bf16 or f16"));
}

TEST_CASE("f16 <-> f32 on all 65,536 f16 bit patterns", "[ops][f16]") {
  std::size_t wrong_value = 0, wrong_round_trip = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    const double sign = (h & 0x8000u) ? -1.0 : 1.0;
    const double want = exponent == 0    ? sign * std::ldexp(static_cast<double>(mantissa), -24)
                        : exponent == 31 ? (mantissa ? NAN : sign * INFINITY)
                                         : sign * std::ldexp(1.0 + mantissa / 1024.0, static_cast<int>(exponent) - 15);
    const float got = half::f16_to_float(static_cast<std::uint16_t>(h));
    const bool nan = exponent == 31 && mantissa != 0;
    wrong_value += nan ? !std::isnan(got) : !(static_cast<double>(got) == want && std::signbit(got) == std::signbit(want));
    const std::uint16_t back = half::float_to_f16(got);
    wrong_round_trip += back != (nan ? static_cast<std::uint16_t>((h & 0x8000u) | 0x7e00u) : h);
  }
  CHECK(wrong_value == 0);
  CHECK(wrong_round_trip == 0);  // every f16 value survives f32 and back; NaN becomes the quiet NaN
}
