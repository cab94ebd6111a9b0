// Casts between every dtype pair, with bf16/f16 rounding checked against hand-worked values.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <loom/core/half.h>
#include <loom/core/ops.h>

using namespace loom;

TEST_CASE("dtype names and sizes", "[dtype]") {
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(dtype_size(DType::i64) == 8);
  CHECK(parse_dtype("f16") == DType::f16);
  CHECK_THROWS_WITH(parse_dtype("f8"), Catch::Contains("unknown dtype 'f8'"));
}

TEST_CASE("bf16 and f16 round to nearest even", "[dtype]") {
  CHECK(half::float_to_bf16(1.0f) == 0x3f80);
  CHECK(half::bf16_to_float(0x3f80) == 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1+2^-7: ties to even -> 1.0
  CHECK(half::bf16_to_float(half::float_to_bf16(1.0f + 1.0f / 256)) == 1.0f);
  CHECK(half::bf16_to_float(half::float_to_bf16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);
  CHECK(half::float_to_f16(1.0f) == 0x3c00);
  CHECK(half::float_to_f16(-2.0f) == 0xc000);
  CHECK(half::float_to_f16(65504.0f) == 0x7bff);
  CHECK(half::float_to_f16(1e6f) == 0x7c00);  // overflow to inf
  CHECK(half::f16_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(half::f16_to_float(half::float_to_f16(std::ldexp(1.0f, -24))) == std::ldexp(1.0f, -24));
  CHECK(half::f16_to_float(half::float_to_f16(1.0f + 1.0f / 2048)) == 1.0f);  // tie to even
  CHECK(std::isnan(half::f16_to_float(half::float_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  // 1e-5 is subnormal in f16: absolute spacing 2^-24, so at most half of that off.
  CHECK(std::abs(half::f16_to_float(half::float_to_f16(1e-5f)) - 1e-5f) <= std::ldexp(1.0f, -25));
  for (float v : {0.1f, -3.14159f, 1000.5f, 2e-4f}) {
    CHECK(half::f16_to_float(half::float_to_f16(v)) == Approx(v).epsilon(1e-3));
    CHECK(half::bf16_to_float(half::float_to_bf16(v)) == Approx(v).epsilon(1e-2));
  }
}

TEST_CASE("cast through every dtype pair", "[dtype]") {
  const std::vector<double> values{0, 1, -2, 3, 100, -7};
  const DType all[] = {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64};
  for (DType from : all)
    for (DType to : all) {
      Tensor source = Tensor::from_vector<double>(values, {2, 3}).to(from);
      Tensor out = source.to(to);
      CHECK(out.dtype() == to);
      CHECK(out.shape() == Shape{2, 3});
      CHECK(out.to_double_vector() == values);
    }
  Tensor f = Tensor::from_vector<float>({1.75f, -1.75f}, {2});
  CHECK(f.to(DType::i32).to_double_vector() == std::vector<double>{1, -1});  // truncation, like C++
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  CHECK(Tensor::from_vector<std::int64_t>({big}, {1}).to(DType::i64).data<std::int64_t>()[0] == big);
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2});
  CHECK_THROWS_WITH(ops::cast(a, b), Catch::Contains("cast: source [2, 3]"));
}
