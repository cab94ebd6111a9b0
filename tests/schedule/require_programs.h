// The schedule tests' check of a generator against hand-worked programs: each stage's program text
// (compute actions only, or every action) equals the expected line, and the schedule validates.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

namespace loom::schedule::test {

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
