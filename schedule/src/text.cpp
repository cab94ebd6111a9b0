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

#include <loom/base/error.h>

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

// Parses one token, an action or an overlapped pair "(F7c0;B3c1)", onto `program`; returns what is
// wrong with it, or nullopt.
std::optional<std::string> parse_item(std::string_view token, std::vector<Action>& program) {
  if (token.front() != '(') {
    Action action;
    if (auto problem = parse_token(token, action)) return problem;
    program.push_back(action);
    return std::nullopt;
  }
  const std::size_t semicolon = token.find(';');
  if (token.back() != ')' || semicolon == std::string_view::npos || token.size() < 5)
    return "an overlapped pair is written (F<mb>[c<chunk>];B<mb>[c<chunk>]), e.g. (F7c0;B3c1)";
  Action halves[2];
  const std::string_view parts[2] = {token.substr(1, semicolon - 1), token.substr(semicolon + 1, token.size() - semicolon - 2)};
  for (int h = 0; h < 2; ++h)
    if (auto problem = parse_token(parts[h], halves[h])) return "in the overlapped pair: " + *problem;
  if (halves[0].op != Op::Forward || halves[1].op != Op::Backward)
    return "an overlapped pair runs a forward F and a full backward B, in that order (e.g. (F7c0;B3c1))";
  halves[0].overlap = Overlap::forward_half;
  halves[1].overlap = Overlap::backward_half;
  program.push_back(halves[0]);
  program.push_back(halves[1]);
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

// One entry of a placement line: the virtual stage and its 1-based column, for errors.
struct PlacedChunk {
  int virtual_stage = 0;
  std::size_t column = 0;
};

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
    if (action.overlap == Overlap::backward_half) {  // "(F7c0;B3c1)": its forward half wrote "(F7c0;"
      text += to_string(action, schedule.chunks > 1) + ")";
      continue;
    }
    if (!text.empty()) text += ' ';
    if (action.overlap == Overlap::forward_half) text += '(';
    text += to_string(action, schedule.chunks > 1);
    if (action.overlap == Overlap::forward_half) text += ';';
  }
  return text;
}

std::string placement_text(const Schedule& schedule) {
  if (schedule.placement.empty()) return "";
  const int stages = static_cast<int>(schedule.programs.size());
  LOOM_CHECK(static_cast<long long>(schedule.placement.size()) == static_cast<long long>(stages) * schedule.chunks,
             "schedule '", schedule.name, "': the placement has ", schedule.placement.size(), " entries for ", stages,
             " stages x ", schedule.chunks, " chunks");
  std::string text = "placement";
  for (int s = 0; s < stages; ++s)
    for (int c = 0; c < schedule.chunks; ++c) {
      text += c == 0 ? ' ' : ',';
      text += std::to_string(schedule.placement[static_cast<std::size_t>(c * stages + s)]);
    }
  return text;
}

std::string to_text(const Schedule& schedule, TextStyle style) {
  std::string text = "schedule " + (schedule.name.empty() ? std::string("custom") : schedule.name) + "\n";
  if (!schedule.placement.empty()) text += placement_text(schedule) + "\n";
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
  int tokens = 0;
  for_each_token(line, [&](std::string_view token, std::size_t column) {
    ++tokens;
    if (auto problem = parse_item(token, program))
      LOOM_THROW("bad action '", excerpt(token), "' (token ", tokens, ", column ", column, "): ", *problem);
  });
  return program;
}

// The entries of a `placement` line: per stage, its chunks' virtual stages with their columns.
template <typename Where>
std::vector<std::vector<PlacedChunk>> parse_placement_line(const std::string& line, const Where& where) {
  std::vector<std::vector<PlacedChunk>> placement;
  const std::size_t keyword = line.find("placement");
  for_each_token(std::string_view(line).substr(keyword + 9), [&](std::string_view token, std::size_t column) {
    const std::size_t at = keyword + 9 + column;  // 1-based column in the line
    const int stage = static_cast<int>(placement.size());
    LOOM_CHECK(stage < kMaxStages, where(at), "the placement names more than ", kMaxStages, " stages");
    std::vector<PlacedChunk> chunks;
    std::size_t pos = 0;
    while (true) {
      const std::size_t begin = pos;
      std::optional<int> value = read_number(token, pos);
      LOOM_CHECK(value.has_value(), where(at + begin), "bad placement entry '", excerpt(token), "' (stage ", stage,
                 "): expected virtual stages separated by commas, one per chunk (e.g. '0,7')");
      LOOM_CHECK(*value < kMaxStages * kMaxChunks, where(at + begin), "placement: virtual stage ", *value,
                 " of stage ", stage, " is beyond the largest a schedule may have (", kMaxStages * kMaxChunks - 1, ")");
      chunks.push_back({*value, at + begin});
      if (pos == token.size()) break;
      LOOM_CHECK(token[pos] == ',' && pos + 1 < token.size(), where(at + pos), "bad placement entry '",
                 excerpt(token), "' (stage ", stage,
                 "): expected virtual stages separated by commas, one per chunk (e.g. '0,7')");
      ++pos;
    }
    LOOM_CHECK(static_cast<int>(chunks.size()) <= kMaxChunks, where(at), "placement: stage ", stage, " has ",
               chunks.size(), " chunks, more than the ", kMaxChunks, " a schedule may have");
    LOOM_CHECK(placement.empty() || chunks.size() == placement.front().size(), where(at), "placement: stage ",
               stage, " has ", chunks.size(), " chunks but stage 0 has ", placement.front().size(),
               " (every stage holds the same number)");
    placement.push_back(std::move(chunks));
  });
  return placement;
}

// Checks a parsed placement against the stage lines and stores it (placement[stage][chunk]).
template <typename Where>
void apply_placement(Schedule& schedule, const std::vector<std::vector<PlacedChunk>>& placement, int max_chunk,
                     const std::string& source, const Where& where) {
  const int stages = schedule.stages, chunks = static_cast<int>(placement.front().size());
  LOOM_CHECK(static_cast<int>(placement.size()) == stages, where(1), "the placement names ", placement.size(),
             " stages, but the schedule has ", stages, " stage lines");
  LOOM_CHECK(max_chunk < chunks, where(1), "the placement gives each stage ", chunks, " chunks, but the programs use chunk ",
             max_chunk);
  schedule.chunks = chunks;
  check_size(schedule.stages, schedule.microbatches, schedule.chunks, source);
  const int total = stages * chunks;
  std::vector<int> holder(static_cast<std::size_t>(total), -1);  // virtual stage -> stage * chunks + chunk
  schedule.placement.assign(static_cast<std::size_t>(total), 0);
  for (int s = 0; s < stages; ++s)
    for (int c = 0; c < chunks; ++c) {
      const PlacedChunk& entry = placement[s][c];
      LOOM_CHECK(entry.virtual_stage < total, where(entry.column), "placement: virtual stage ", entry.virtual_stage,
                 " (stage ", s, " chunk ", c, ") is outside 0..", total - 1, " (", stages, " stages x ", chunks,
                 " chunks)");
      int& other = holder[static_cast<std::size_t>(entry.virtual_stage)];
      LOOM_CHECK(other < 0, where(entry.column), "placement: virtual stage ", entry.virtual_stage,
                 " is given twice (stage ", other / chunks, " chunk ", other % chunks, " and stage ", s, " chunk ", c, ")");
      other = s * chunks + c;
      schedule.placement[static_cast<std::size_t>(c * stages + s)] = entry.virtual_stage;
    }
  // S·v entries in range, none twice: every virtual stage is placed once.
}

Schedule parse_schedule(std::string_view text, const std::string& source) {
  Schedule schedule;
  schedule.name = "custom";
  bool named = false;
  int line_number = 0;
  int placement_line = 0;                         // where the placement was, 0 for none
  std::vector<std::vector<PlacedChunk>> placement;  // placement[stage][chunk]
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
    if (content.rfind("placement", 0) == 0 && (content.size() == 9 || std::isspace(static_cast<unsigned char>(content[9])))) {
      LOOM_CHECK(placement_line == 0 && schedule.programs.empty(), where(1),
                 "'placement ...' must come once, before the stage lines");
      placement_line = line_number;
      placement = parse_placement_line(line, where);
      LOOM_CHECK(!placement.empty(), where(1),
                 "'placement' must be followed by each stage's virtual stages, one per chunk (e.g. 'placement 0,3 1,2')");
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
    int tokens = 0;
    for_each_token(rest, [&](std::string_view token, std::size_t column) {
      ++tokens;
      if (auto problem = parse_item(token, program))
        LOOM_THROW(where(colon + 1 + column), "bad action '", excerpt(token), "' (token ", tokens, " of stage ",
                   expected, "): ", *problem);
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
  if (placement_line > 0) {
    apply_placement(schedule, placement, max_chunk, source, [&](std::size_t column) {
      return source + ":" + std::to_string(placement_line) + ":" + std::to_string(column) + ": ";
    });
    return schedule;
  }
  check_size(schedule.stages, schedule.microbatches, schedule.chunks, source);
  return schedule;
}

}  // namespace loom::schedule
