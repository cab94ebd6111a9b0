// Numbers read from environment variables. The whole value must parse and lie in range ("4abc" is
// not 4, "-1" is not a count), or the loom::Error names the variable and what it should be. An
// unset or empty variable gives the caller's fallback. Header-only like error.h.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <system_error>

#include <loom/base/error.h>

namespace loom {

// An integer in [0, max].
inline long long env_count(const char* name, long long fallback, long long max) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  const std::string_view text(value);
  long long parsed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  LOOM_CHECK(error == std::errc() && end == text.data() + text.size() && parsed >= 0 && parsed <= max,
             "environment variable ", name, "='", excerpt(text), "' is not a count (an integer in [0, ", max, "])");
  return parsed;
}

// A finite number greater than zero.
inline double env_positive(const char* name, double fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const double parsed = std::strtod(value, &end);
  LOOM_CHECK(end != value && *end == '\0' && std::isfinite(parsed) && parsed > 0, "environment variable ", name, "='",
             excerpt(value), "' is not a positive number");
  return parsed;
}

}  // namespace loom
