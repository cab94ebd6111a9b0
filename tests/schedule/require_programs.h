// The schedule tests' check of a generator against hand-worked programs: each stage's program text
// (compute actions only, or every action) equals the expected line, and the schedule validates;
// and the validator's first error.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

namespace loom::schedule::test {

// The validator's first error for `schedule`, or "" when it is valid.
inline std::string first_error(const Schedule& schedule) {
  const ValidationReport report = validate(schedule);
  return report.errors.empty() ? "" : report.errors.front();
}

inline void require_programs(const Schedule& schedule, const std::vector<std::string>& expected,
                             TextStyle style = TextStyle::Compute) {
  REQUIRE(schedule.programs.size() == expected.size());
  for (int s = 0; s < static_cast<int>(expected.size()); ++s) {
    INFO(schedule.name << " stage " << s);
    CHECK(program_text(schedule, s, style) == expected[s]);
  }
  const ValidationReport report = validate(schedule);
  INFO((report.errors.empty() ? "" : report.errors.front()));
  CHECK(report.ok());
}

}  // namespace loom::schedule::test
