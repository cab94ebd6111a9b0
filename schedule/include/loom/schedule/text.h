// The readable text form of a schedule and its parser.
//
//   schedule dapple
//   stage 0: F0 SA0 F1 SA1 ... RG0 B0 ... AR STEP
//   stage 1: RA0 F0 SA0 ...
//
// One line per stage in stage order, tokens separated by blanks (action.h lists them), '#' starts a
// comment. The parser infers S from the stage lines, M and v from the largest micro-batch and chunk.
//
// A schedule with an explicit placement (schedule.h; the V-shaped ones) has, before its stage lines,
//   placement 0,7 1,6 2,5 3,4
// one group per stage in stage order, each the virtual stages of that stage's chunks 0, 1, ...
// separated by commas (here S = 4, v = 2, chunk 0 of stage 1 holds virtual stage 1 and chunk 1 holds
// 6). Every group has v entries and the S·v entries are 0..S·v−1 once each; v is then the group size.
// Without the line the placement is the looped c·S + s (and `placement` stays empty).
#pragma once

#include <loom/base/error.h>

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

// "placement 0,7 1,6 ..." for a schedule with an explicit placement, "" without one.
std::string placement_text(const Schedule& schedule);

// The whole schedule, "schedule NAME" line first, then the placement line if it has one.
std::string to_text(const Schedule& schedule, TextStyle style = TextStyle::Full);

// User text in error messages is quoted with loom::excerpt (base/error.h).
using loom::excerpt;

// Parses one token ("F3c1@2"); errors name the token.
Action parse_action(std::string_view token);

// Parses one stage's tokens; errors name the token and its position (1-based token index and column).
std::vector<Action> parse_program(std::string_view line);

// Parses to_text()'s format; `source` names the input in errors ("plan.txt", "<stdin>").
// Errors say: source:line:column: the token and what is wrong with it.
Schedule parse_schedule(std::string_view text, const std::string& source = "<schedule>");

}  // namespace loom::schedule
