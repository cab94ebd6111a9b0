// The readable text form of a schedule and its parser.
//
//   schedule dapple
//   stage 0: F0 SA0 F1 SA1 ... RG0 B0 ... AR STEP
//   stage 1: RA0 F0 SA0 ...
//
// One line per stage in stage order, tokens separated by blanks (action.h lists them), '#' starts a
// comment. The parser infers S from the stage lines, M and v from the largest micro-batch and chunk.
#pragma once

#include <loom/core/error.h>

#include <string>
#include <string_view>
#include <vector>

#include <loom/schedule/schedule.h>

namespace loom::schedule {

enum class TextStyle {
  Full,     // every action
  Compute,  // without SA/RA/SG/RG (the short form used in docs and tests)
};

// One stage's program on one line, without the "stage N:" prefix.
std::string program_text(const Schedule& schedule, int stage, TextStyle style = TextStyle::Compute);

// The whole schedule, "schedule NAME" line first.
std::string to_text(const Schedule& schedule, TextStyle style = TextStyle::Full);

// User text in error messages is quoted with loom::excerpt (core/error.h).
using loom::excerpt;

// Parses one token ("F3c1@2"); errors name the token.
Action parse_action(std::string_view token);

// Parses one stage's tokens; errors name the token and its position (1-based token index and column).
std::vector<Action> parse_program(std::string_view line);

// Parses to_text()'s format; `source` names the input in errors ("plan.txt", "<stdin>").
// Errors say: source:line:column: the token and what is wrong with it.
Schedule parse_schedule(std::string_view text, const std::string& source = "<schedule>");

}  // namespace loom::schedule
