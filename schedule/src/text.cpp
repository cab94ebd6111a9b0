// Text form of schedules: printing and parsing. Parse errors point at the token (and its line and
// column) and say what is wrong with it, because hand-written schedules are user input.
#include <loom/schedule/text.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <sstream>
#include <utility>

#include <loom/schedule/validator.h>

#include <loom/core/error.h>

namespace loom::schedule {

namespace {

constexpr std::array<std::pair<std::string_view, Op>, 10> kOps = {{
    {"F", Op::Forward}, {"B", Op::Backward}, {"BI", Op::BackwardInput}, {"BW", Op::BackwardWeight},
    {"SA", Op::SendActivation}, {"RA", Op::RecvActivation}, {"SG", Op::SendGradient},
    {"RG", Op::RecvGradient}, {"AR", Op::AllReduce}, {"STEP", Op::Step},
}};

// Reads a non-negative decimal number at `pos`; nullopt if there is none or it is absurdly long.
std::optional<int> read_number(std::string_view token, std::size_t& pos) {
  std::size_t begin = pos;
  long value = 0;
  while (pos < token.size() && std::isdigit(static_cast<unsigned char>(token[pos]))) {
    value = value * 10 + (token[pos] - '0');
    if (value > 100'000'000) return std::nullopt;
    ++pos;
  }
  if (pos == begin) return std::nullopt;
  return static_cast<int>(value);
}

// Parses one token into `action`; returns what is wrong with it, or nullopt.
std::optional<std::string> parse_token(std::string_view token, Action& action) {
  std::size_t pos = 0;
  while (pos < token.size() && std::isupper(static_cast<unsigned char>(token[pos]))) ++pos;
  std::string_view name = token.substr(0, pos);
  auto known = std::find_if(kOps.begin(), kOps.end(), [&](const auto& entry) { return entry.first == name; });
  if (known == kOps.end())
    return "unknown action (expected F, B, BI, BW, SA, RA, SG, RG followed by a micro-batch, or AR, STEP)";
  action = Action{known->second, -1, 0, -1};
  if (action.op == Op::AllReduce || action.op == Op::Step) {
    if (pos != token.size()) return std::string(name) + " takes no micro-batch, chunk or version";
    return std::nullopt;
  }
  std::optional<int> microbatch = read_number(token, pos);
  if (!microbatch) return std::string(name) + " must be followed by a micro-batch number";
  if (*microbatch >= kMaxMicrobatches)
    return "micro-batch " + std::to_string(*microbatch) + " is beyond the largest a schedule may have (" +
           std::to_string(kMaxMicrobatches - 1) + ")";
  action.microbatch = *microbatch;
  if (pos < token.size() && token[pos] == 'c') {
    ++pos;
    std::optional<int> chunk = read_number(token, pos);
    if (!chunk) return "'c' must be followed by a chunk number";
    if (*chunk >= kMaxChunks)
      return "chunk " + std::to_string(*chunk) + " is beyond the largest a schedule may have (" +
             std::to_string(kMaxChunks - 1) + ")";
    action.chunk = *chunk;
  }
  if (pos < token.size() && token[pos] == '@') {
    ++pos;
    std::optional<int> version = read_number(token, pos);
    if (!version) return "'@' must be followed by a weight version";
    action.version = *version;
  }
  if (pos != token.size())
    return "unexpected '" + excerpt(token.substr(pos)) + "' (the form is OPmicrobatch[cCHUNK][@VERSION])";
  return std::nullopt;
}

// Calls `each(token, column)` (column 1-based within `line`) for every blank-separated token
// before a '#'.
template <typename Each>
void for_each_token(std::string_view line, Each each) {
  std::size_t end = std::min(line.find('#'), line.size());
  std::size_t pos = 0;
  while (pos < end) {
    while (pos < end && std::isspace(static_cast<unsigned char>(line[pos]))) ++pos;
    std::size_t begin = pos;
    while (pos < end && !std::isspace(static_cast<unsigned char>(line[pos]))) ++pos;
    if (pos > begin) each(line.substr(begin, pos - begin), begin + 1);
  }
}

std::string trim(std::string_view text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

}  // namespace

std::string program_text(const Schedule& schedule, int stage, TextStyle style) {
  std::string text;
  for (const Action& action : schedule.programs.at(stage)) {
    if (style == TextStyle::Compute && is_communication(action.op)) continue;
    if (!text.empty()) text += ' ';
    text += to_string(action, schedule.chunks > 1);
  }
  return text;
}

std::string to_text(const Schedule& schedule, TextStyle style) {
  std::string text = "schedule " + (schedule.name.empty() ? std::string("custom") : schedule.name) + "\n";
  for (int stage = 0; stage < static_cast<int>(schedule.programs.size()); ++stage)
    text += "stage " + std::to_string(stage) + ": " + program_text(schedule, stage, style) + "\n";
  return text;
}

Action parse_action(std::string_view token) {
  Action action;
  if (auto problem = parse_token(token, action)) LOOM_THROW("bad action '", excerpt(token), "': ", *problem);
  return action;
}

std::vector<Action> parse_program(std::string_view line) {
  std::vector<Action> program;
  for_each_token(line, [&](std::string_view token, std::size_t column) {
    Action action;
    if (auto problem = parse_token(token, action))
      LOOM_THROW("bad action '", excerpt(token), "' (token ", program.size() + 1, ", column ", column, "): ", *problem);
    program.push_back(action);
  });
  return program;
}

Schedule parse_schedule(std::string_view text, const std::string& source) {
  Schedule schedule;
  schedule.name = "custom";
  bool named = false;
  int line_number = 0;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    ++line_number;
    std::string content = trim(std::string_view(line).substr(0, std::min(line.find('#'), line.size())));
    if (content.empty()) continue;
    auto where = [&](std::size_t column) {
      return source + ":" + std::to_string(line_number) + ":" + std::to_string(column) + ": ";
    };
    if (content.rfind("schedule", 0) == 0 && (content.size() == 8 || std::isspace(static_cast<unsigned char>(content[8])))) {
      LOOM_CHECK(!named && schedule.programs.empty(), where(1),
                      "'schedule NAME' must come once, before the stage lines");
      schedule.name = trim(std::string_view(content).substr(8));
      LOOM_CHECK(!schedule.name.empty() && schedule.name.find(' ') == std::string::npos &&
                          schedule.name.size() <= 80,
                      where(1), "'schedule' must be followed by one name (of at most 80 characters)");
      named = true;
      continue;
    }
    std::size_t colon = line.find(':');
    const int expected = static_cast<int>(schedule.programs.size());
    LOOM_CHECK(expected < kMaxStages, where(1), "more than ", kMaxStages, " stage lines");
    const std::string header = colon == std::string::npos ? "" : trim(std::string_view(line).substr(0, colon));
    LOOM_CHECK(header == "stage " + std::to_string(expected), where(1), "expected 'stage ", expected,
                    ": <actions>' (stages in order from 0), found '", excerpt(content), "'");
    std::vector<Action> program;
    std::string_view rest = std::string_view(line).substr(colon + 1);
    for_each_token(rest, [&](std::string_view token, std::size_t column) {
      Action action;
      if (auto problem = parse_token(token, action))
        LOOM_THROW(where(colon + 1 + column), "bad action '", excerpt(token), "' (token ", program.size() + 1,
                     " of stage ", expected, "): ", *problem);
      program.push_back(action);
    });
    schedule.programs.push_back(std::move(program));
  }
  LOOM_CHECK(!schedule.programs.empty(), source, ": no 'stage N: ...' lines");
  schedule.stages = static_cast<int>(schedule.programs.size());
  int max_microbatch = -1, max_chunk = 0;
  for (const auto& program : schedule.programs)
    for (const Action& action : program) {
      max_microbatch = std::max(max_microbatch, action.microbatch);
      max_chunk = std::max(max_chunk, action.chunk);
    }
  LOOM_CHECK(max_microbatch >= 0, source, ": the schedule has no micro-batch actions");
  schedule.microbatches = max_microbatch + 1;
  schedule.chunks = max_chunk + 1;
  check_size(schedule.stages, schedule.microbatches, schedule.chunks, source);
  return schedule;
}

}  // namespace loom::schedule
