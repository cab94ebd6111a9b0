// rate_text, three_digits and duration_text (see rate_text.h).
#include "rate_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace loom::apps {

std::string three_digits(double value) {
  if (!(value > 0)) return "0";
  if (!std::isfinite(value)) return "inf";
  // Round first, then take the decimals from the rounded value: 9.996 is "10.0", not "10.00".
  const auto round_to_3 = [](double v, int exponent) {
    const double scale = std::pow(10.0, 2 - exponent);
    return std::round(v * scale) / scale;
  };
  int exponent = static_cast<int>(std::floor(std::log10(value)));
  const double rounded = round_to_3(value, exponent);
  exponent = static_cast<int>(std::floor(std::log10(rounded)));
  char text[400];
  std::snprintf(text, sizeof text, "%.*f", std::max(0, 2 - exponent), round_to_3(rounded, exponent));
  return text;
}

std::string rate_text(std::int64_t samples, double seconds, std::int64_t steps) {
  if (samples <= 0 || steps <= 0) return "0 samples/s";
  const double elapsed = std::max(seconds, 1e-9), rate = static_cast<double>(samples) / elapsed;
  if (rate >= 1.0) return three_digits(rate) + " samples/s";
  return three_digits(elapsed / static_cast<double>(steps)) + " s/step";
}

std::string duration_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return text;
}

}  // namespace loom::apps
