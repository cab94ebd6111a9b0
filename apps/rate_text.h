// How `loom train` writes speeds and times for people: 3 significant digits, s/step when slow.
#pragma once

#include <cstdint>
#include <string>

namespace loom::apps {

// `samples` over `seconds` as "1230 samples/s", "12.3 samples/s", "1.07 samples/s"; under one
// sample a second, the seconds per step instead ("75.4 s/step": `steps` steps took `seconds`).
// Nothing run (no samples or no steps): "0 samples/s".
std::string rate_text(std::int64_t samples, double seconds, std::int64_t steps);

// `value` rounded to 3 significant digits, without an exponent: "1230", "12.3", "0.107", "5.00"
// ("0" for zero or less, "inf" past the largest double).
std::string three_digits(double value);

// A duration as H:MM:SS ("0:01:15"), rounded to the second; negative is 0:00:00.
std::string duration_text(double seconds);

}  // namespace loom::apps
