// rate_text, three_digits and duration_text (apps/rate_text.h): the speeds and times of `loom train`'s progress output.
#include <catch2/catch.hpp>

#include "rate_text.h"

using loom::apps::duration_text;
using loom::apps::rate_text;
using loom::apps::three_digits;

TEST_CASE("three_digits keeps 3 significant digits without an exponent", "[apps][progress]") {
  CHECK(three_digits(1234.0) == "1230");
  CHECK(three_digits(123456.0) == "123000");
  CHECK(three_digits(12.34) == "12.3");
  CHECK(three_digits(5.0) == "5.00");
  CHECK(three_digits(0.10666) == "0.107");
  CHECK(three_digits(0.0012345) == "0.00123");
  CHECK(three_digits(9.996) == "10.0");   // rounding carries into the next decade
  CHECK(three_digits(999.6) == "1000");
  CHECK(three_digits(0.0) == "0");
  CHECK(three_digits(-3.0) == "0");
}

TEST_CASE("rate_text: samples/s from one sample a second, s/step below", "[apps][progress]") {
  CHECK(rate_text(12300, 10.0, 100) == "1230 samples/s");
  CHECK(rate_text(123, 10.0, 2) == "12.3 samples/s");
  CHECK(rate_text(8, 8.0, 2) == "1.00 samples/s");
  // A paper-size model: 2 steps of 4 samples in 150.8 s was "0 samples/s".
  CHECK(rate_text(8, 150.8, 2) == "75.4 s/step");
  CHECK(rate_text(1, 1.5, 1) == "1.50 s/step");
  CHECK(rate_text(0, 3.0, 0) == "0 samples/s");
  CHECK(rate_text(64, 0.0, 1) == "64000000000 samples/s");  // no time measured: 1 ns
}

TEST_CASE("duration_text writes H:MM:SS", "[apps][progress]") {
  CHECK(duration_text(75.4) == "0:01:15");
  CHECK(duration_text(3 * 3600 + 59.6) == "3:01:00");
  CHECK(duration_text(-5) == "0:00:00");
}
