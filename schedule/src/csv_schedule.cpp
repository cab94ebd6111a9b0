// PyTorch's compute-only CSV schedules (schedule_file.h): reading, with every error pointing at the
// rank and cell of the file, and writing. The cell grammar follows torch.distributed.pipelining's
// _Action: STAGE, a computation type, then the micro-batch ("0F0", "1I3", "3SEND_F1", "0UNSHARD").
#include <loom/schedule/schedule_file.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <utility>
#include <vector>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/validator.h>

namespace loom::schedule {

namespace {

// The largest PyTorch stage index loom can place: S·v virtual stages at most.
constexpr int kMaxVirtualStages = kMaxStages * kMaxChunks;

// Cell types loom derives itself (transfers, FSDP's unshard/reshard, the gradient reduction), old
// fused transfer names included: ignored when read.
constexpr std::array<std::string_view, 9> kDerived = {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD",
                                                      "RESHARD", "REDUCE_GRAD", "SEND_F_RECV_B", "SEND_B_RECV_F"};

struct Cell {
  std::string text;  // unquoted, as written
  int step = 0;      // 1-based position in its row
};

// One compute cell of a rank: the PyTorch stage (loom's virtual stage), the op and micro-batch.
struct Compute {
  int stage = 0;
  Op op = Op::Forward;
  int microbatch = 0;
  Overlap overlap = Overlap::none;
  int step = 0;
  std::string text;
};

// "SOURCE: rank R, step K: 'CELL': why", the cell cut at 80 characters and control characters (a
// quoted cell may hold a newline) shown as '?', so the message stays one line.
template <typename... Parts>
[[noreturn]] void cell_error(const std::string& source, int rank, int step, std::string_view cell,
                             const Parts&... parts) {
  std::string message = loom::detail::concat("rank ", rank, ", step ", step, ": '", excerpt(cell), "': ", parts...);
  for (char& c : message)
    if (std::iscntrl(static_cast<unsigned char>(c))) c = '?';
  LOOM_THROW(source, ": ", message);
}

std::string_view trimmed(std::string_view text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

bool blank(const std::vector<Cell>& row) {
  return std::all_of(row.begin(), row.end(), [](const Cell& c) { return trimmed(c.text).empty(); });
}

// CSV records as Python's csv module reads them: records end in \r\n, \n or \r; fields are split
// on ',' and may be quoted ("a,b", "" for a quote). Blank records at the end of the file are dropped
// (an editor's last newline); blank records before a row are ranks without actions.
std::vector<std::vector<Cell>> csv_rows(std::string_view text, const std::string& source) {
  std::vector<std::vector<Cell>> rows;
  std::vector<Cell> row;
  std::string field;
  std::size_t blank_rows = 0;  // blank records not yet known to be followed by a row
  bool quoted = false, was_quoted = false;
  auto end_field = [&] {
    row.push_back({std::move(field), static_cast<int>(row.size()) + 1});
    field.clear();
    was_quoted = false;
  };
  auto end_row = [&] {
    end_field();
    if (blank(row)) {
      ++blank_rows;
    } else {
      LOOM_CHECK(rows.size() + blank_rows < static_cast<std::size_t>(kMaxStages), source, ": more than ", kMaxStages,
                 " rows (one per rank; loom runs at most ", kMaxStages, " stages)");
      for (; blank_rows > 0; --blank_rows) rows.push_back({Cell{"", 1}});
      rows.push_back(std::move(row));
    }
    row.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"') field += text[++i];
      else quoted = false;
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_row();
    } else {
      field += c;
    }
  }
  if (quoted)
    cell_error(source, static_cast<int>(rows.size() + blank_rows), static_cast<int>(row.size()) + 1, field,
               "a quoted cell is not closed (no '\"' before the end of the file)");
  if (!field.empty() || !row.empty()) end_row();
  return rows;
}

// A decimal number at `pos` (advanced past it); nullopt if there is none, or past `most`.
std::optional<int> read_number(std::string_view text, std::size_t& pos, int most) {
  const std::size_t begin = pos;
  long long value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    value = std::min<long long>(value * 10 + (text[pos] - '0'), 1LL << 40);
    ++pos;
  }
  if (pos == begin || value > most) return std::nullopt;
  return static_cast<int>(value);
}

// Parses one non-blank cell: a compute action into `action` (true), a derived one (false); what is
// wrong with it is thrown as that cell's error by the caller, here returned.
std::optional<std::string> parse_cell(std::string_view cell, Compute& action, bool& compute) {
  compute = false;
  std::size_t pos = 0;
  const bool digits = std::isdigit(static_cast<unsigned char>(cell.front()));
  const std::optional<int> stage = read_number(cell, pos, kMaxVirtualStages - 1);
  if (digits && !stage)
    return "stage index beyond the largest loom places (" + std::to_string(kMaxVirtualStages - 1) + " = " +
           std::to_string(kMaxStages) + " stages x " + std::to_string(kMaxChunks) + " chunks - 1)";
  const std::size_t name_begin = pos;
  while (pos < cell.size() && (std::isupper(static_cast<unsigned char>(cell[pos])) || cell[pos] == '_')) ++pos;
  const std::string_view name = cell.substr(name_begin, pos - name_begin);
  if (!stage || name.empty())
    return "not a PyTorch action: the form is STAGE, then F, I, B or W, then MICROBATCH (0F0, 1I3, 2W1, 1B0)";
  if (std::find(kDerived.begin(), kDerived.end(), name) != kDerived.end()) {
    std::size_t end = pos;
    if (end < cell.size() && !read_number(cell, end, kMaxMicrobatches - 1)) end = pos;
    if (end != cell.size()) return "unexpected '" + excerpt(cell.substr(end), 20) + "' after " + std::string(name);
    return std::nullopt;  // derived by loom: ignored
  }
  if (name == "BW")
    return "'BW' is ambiguous (old PyTorch's full backward, loom's weight backward): write B for the full backward, "
           "or I and then W";
  static constexpr std::array<std::pair<std::string_view, Op>, 4> kCompute = {
      {{"F", Op::Forward}, {"B", Op::Backward}, {"I", Op::BackwardInput}, {"W", Op::BackwardWeight}}};
  const auto known = std::find_if(kCompute.begin(), kCompute.end(), [&](const auto& e) { return e.first == name; });
  if (known == kCompute.end())
    return "unknown action type '" + excerpt(name, 20) +
           "' (F, I, B, W; SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD, REDUCE_GRAD are ignored)";
  const bool has_number = pos < cell.size() && std::isdigit(static_cast<unsigned char>(cell[pos]));
  const std::optional<int> microbatch = read_number(cell, pos, kMaxMicrobatches - 1);
  if (!has_number) return std::string(name) + " needs a micro-batch number after it (e.g. " + std::to_string(*stage) +
                          std::string(name) + "0)";
  if (!microbatch)
    return "micro-batch index beyond the largest a schedule may have (" + std::to_string(kMaxMicrobatches - 1) + ")";
  if (pos != cell.size()) return "unexpected '" + excerpt(cell.substr(pos), 20) + "' after the micro-batch";
  action.stage = *stage;
  action.op = known->second;
  action.microbatch = *microbatch;
  compute = true;
  return std::nullopt;
}

// Parses one non-blank cell onto `computes`: nothing for a derived action, one compute, or the two
// halves of PyTorch's overlapped pair "(0F7;7B3)OVERLAP_F_B" (a forward, then a full backward).
std::optional<std::string> parse_cell(std::string_view cell, std::vector<Compute>& computes) {
  Compute action;
  bool compute = false;
  if (cell.front() != '(') {
    auto problem = parse_cell(cell, action, compute);
    if (!problem && compute) computes.push_back(action);
    return problem;
  }
  constexpr std::string_view kSuffix = ")OVERLAP_F_B";
  const std::size_t semicolon = cell.find(';');
  if (cell.size() < kSuffix.size() + 4 || cell.substr(cell.size() - kSuffix.size()) != kSuffix ||
      semicolon == std::string_view::npos || semicolon > cell.size() - kSuffix.size())
    return "an overlapped pair is written (FORWARD;BACKWARD)OVERLAP_F_B, e.g. (0F7;7B3)OVERLAP_F_B";
  const std::string_view halves[2] = {cell.substr(1, semicolon - 1),
                                      cell.substr(semicolon + 1, cell.size() - kSuffix.size() - semicolon - 1)};
  for (int h = 0; h < 2; ++h) {
    if (halves[h].empty()) return "an overlapped pair needs two actions, e.g. (0F7;7B3)OVERLAP_F_B";
    if (auto problem = parse_cell(halves[h], action, compute)) return "in the overlapped pair: " + *problem;
    if (!compute || action.op != (h == 0 ? Op::Forward : Op::Backward))
      return "an overlapped pair runs a forward F and then a full backward B (e.g. (0F7;7B3)OVERLAP_F_B)";
    action.overlap = h == 0 ? Overlap::forward_half : Overlap::backward_half;
    computes.push_back(action);
  }
  return std::nullopt;
}

using FirstSeen = std::map<int, std::pair<int, int>>;  // stage -> (rank, step) of its first cell

// Adds one compute of cell `cell` of rank `r`: its micro-batch within the asked-for M, its stage on
// no other rank.
void add_compute(Compute action, std::vector<std::vector<Compute>>& ranks, FirstSeen& first_seen, int r,
                 const Cell& cell, const std::string& source, const ScheduleFileOptions& options) {
  if (options.microbatches > 0 && action.microbatch >= options.microbatches)
    cell_error(source, r, cell.step, cell.text, "micro-batch ", action.microbatch, " is outside 0..",
               options.microbatches - 1, " (", options.microbatches, " micro-batches were asked for)");
  const auto [seen, first] = first_seen.try_emplace(action.stage, r, cell.step);
  if (!first && seen->second.first != r)
    cell_error(source, r, cell.step, cell.text, "stage ", action.stage, " is on two ranks (rank ", seen->second.first,
               " runs it at step ", seen->second.second, "): a stage's weights live on one rank");
  action.step = cell.step;
  action.text = cell.text;
  ranks[r].push_back(std::move(action));
}

// The compute cells of every rank, each stage on one rank, micro-batches within the asked-for M.
std::vector<std::vector<Compute>> compute_cells(const std::vector<std::vector<Cell>>& rows, const std::string& source,
                                                const ScheduleFileOptions& options) {
  std::vector<std::vector<Compute>> ranks(rows.size());
  FirstSeen first_seen;
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    for (const Cell& cell : rows[r]) {
      const std::string_view text = trimmed(cell.text);
      if (text.empty()) continue;  // idle step
      std::vector<Compute> computes;
      if (auto problem = parse_cell(text, computes)) cell_error(source, r, cell.step, cell.text, *problem);
      for (Compute& action : computes) add_compute(std::move(action), ranks, first_seen, r, cell, source, options);
    }
  }
  return ranks;
}

// What a (stage, micro-batch) has done so far, and the cell of its I (for "I without W").
struct Progress {
  bool forward = false, backward = false, input = false, weight = false;
  int input_step = 0;
  std::string input_text;
};

using ProgressMap = std::map<std::pair<int, int>, Progress>;

// F before B or I, I before W, each once: checked cell by cell, in each rank's order.
ProgressMap check_order(const std::vector<std::vector<Compute>>& ranks, const std::string& source) {
  ProgressMap progress;
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    for (const Compute& a : ranks[r]) {
      Progress& p = progress[{a.stage, a.microbatch}];
      auto fail = [&](const auto&... why) {
        cell_error(source, r, a.step, a.text, why..., " (stage ", a.stage, ", micro-batch ", a.microbatch, ")");
      };
      if (a.op == Op::Forward) {
        if (p.forward) fail("a second forward");
        p.forward = true;
      } else if (a.op == Op::Backward || a.op == Op::BackwardInput) {
        const char* what = a.op == Op::Backward ? "backward B" : "input backward I";
        if (!p.forward) fail(what, " with no forward before it on this rank (a backward needs its forward's activations)");
        if (p.backward || p.input) fail("a second backward");
        (a.op == Op::Backward ? p.backward : p.input) = true;
        if (a.op == Op::BackwardInput) {
          p.input_step = a.step;
          p.input_text = a.text;
        }
      } else {
        if (p.backward) fail("weight backward W after a full backward B (B computes the weight gradient already; "
                              "old PyTorch files wrote the input backward as B: write it as I)");
        if (!p.input) fail("weight backward W before its input backward I (W needs the gradient I computes)");
        if (p.weight) fail("a second weight backward");
        p.weight = true;
      }
    }
  }
  return progress;
}

// Which rank holds each stage and as which chunk, from the file.
struct Layout {
  int stages = 0, chunks = 1;
  std::vector<int> rank_of, chunk_of;  // by PyTorch stage index
  std::vector<int> placement;          // empty when it is the looped c·S + s
};

Layout layout(const std::vector<std::vector<Compute>>& ranks, const std::string& source) {
  Layout result;
  result.stages = static_cast<int>(ranks.size());
  LOOM_CHECK(result.stages > 0, source, ": no rows (PyTorch's CSV has one row of actions per rank)");
  std::vector<std::set<int>> held(ranks.size());
  int virtual_stages = 0;
  for (int r = 0; r < result.stages; ++r) {
    for (const Compute& a : ranks[r]) {
      held[r].insert(a.stage);
      virtual_stages = std::max(virtual_stages, a.stage + 1);
    }
    LOOM_CHECK(!held[r].empty(), source, ": rank ", r, ": the row has no compute action (F, I, B, W); every rank holds "
               "at least one stage");
  }
  result.rank_of.assign(static_cast<std::size_t>(virtual_stages), -1);
  result.chunk_of.assign(static_cast<std::size_t>(virtual_stages), -1);
  for (int r = 0; r < result.stages; ++r) {
    int chunk = 0;
    for (int stage : held[r]) {
      result.rank_of[stage] = r;
      result.chunk_of[stage] = chunk++;
    }
  }
  for (int stage = 0; stage < virtual_stages; ++stage)
    LOOM_CHECK(result.rank_of[stage] >= 0, source, ": no rank runs stage ", stage, " (the file names stages up to ",
               virtual_stages - 1, ", so each of 0..", virtual_stages - 1, " must be on a rank)");
  result.chunks = static_cast<int>(held[0].size());
  for (int r = 1; r < result.stages; ++r)
    LOOM_CHECK(static_cast<int>(held[r].size()) == result.chunks, source, ": rank ", r, ": holds ", held[r].size(),
               " stages but rank 0 holds ", result.chunks, ": loom puts the same number of chunks on every rank");
  result.placement.assign(static_cast<std::size_t>(virtual_stages), 0);
  bool looped = true;
  for (int stage = 0; stage < virtual_stages; ++stage) {
    const int slot = result.chunk_of[stage] * result.stages + result.rank_of[stage];
    result.placement[static_cast<std::size_t>(slot)] = stage;
    looped = looped && slot == stage;
  }
  if (looped) result.placement.clear();
  return result;
}

// Every stage runs every micro-batch 0..M−1: one F, and B or I then W.
void check_complete(const Layout& layout, int microbatches, const ProgressMap& progress, const std::string& source,
                    const char* why_m) {
  const int virtual_stages = static_cast<int>(layout.rank_of.size());
  for (int stage = 0; stage < virtual_stages; ++stage)
    for (int m = 0; m < microbatches; ++m) {
      const int rank = layout.rank_of[stage];
      const auto found = progress.find({stage, m});
      const Progress p = found == progress.end() ? Progress{} : found->second;
      LOOM_CHECK(p.forward, source, ": rank ", rank, ": stage ", stage, " has no forward of micro-batch ", m, " (M = ",
                 microbatches, why_m, ", so every stage runs micro-batches 0..", microbatches - 1, ")");
      LOOM_CHECK(p.backward || p.input, source, ": rank ", rank, ": stage ", stage, " has no backward of micro-batch ", m,
                 " (B, or I then W)");
      if (p.input && !p.weight)
        cell_error(source, rank, p.input_step, p.input_text, "input backward I with no weight backward W after it (stage ",
                   stage, ", micro-batch ", m, "): the weight gradient would never be computed");
    }
}

// The synchronous finish the generators give a compute order: AR and STEP after each stage's
// compute, the transfers around it.
Schedule finish_synchronous(Schedule compute_only) {
  for (auto& program : compute_only.programs) {
    program.push_back(allreduce());
    program.push_back(optimizer_step());
  }
  return with_communication(std::move(compute_only));
}

// The CSV cell behind action `index` of rank `rank`'s finished program: the compute itself, the
// compute a receive waits for (the next one) or a send follows (the previous one); nullptr for AR/STEP.
const Compute* cell_behind(const Schedule& schedule, const std::vector<Compute>& row, int rank, int index) {
  const auto& program = schedule.programs[rank];
  if (index < 0 || index >= static_cast<int>(program.size())) return nullptr;
  int computes_before = 0;
  for (int i = 0; i < index; ++i) computes_before += is_compute(program[i].op);
  const Op op = program[index].op;
  int which = computes_before;                   // compute or receive: this/the next compute
  if (is_send(op)) which = computes_before - 1;  // a send: the compute before it
  if (!is_compute(op) && !is_communication(op)) return nullptr;
  return which >= 0 && which < static_cast<int>(row.size()) ? &row[which] : nullptr;
}

// The validator's first error, located in the file: "stage S ... action N" is rank S and a cell.
[[noreturn]] void throw_located(const Schedule& schedule, const std::vector<std::vector<Compute>>& ranks,
                                const ValidationReport& report, const std::string& source) {
  std::string why = report.errors.front();
  if (report.errors.size() > 1) why += " (and " + std::to_string(report.errors.size() - 1) + " more problems)";
  static const std::regex stage_pattern(R"(\bstage (\d+))"), action_pattern(R"(\baction (\d+))");
  std::smatch stage_match, action_match;
  const std::string& first = report.errors.front();
  if (!std::regex_search(first, stage_match, stage_pattern) || stage_match[1].length() > 6)
    LOOM_THROW(source, ": the schedule cannot run: ", why);
  const int rank = std::stoi(stage_match[1].str());
  LOOM_CHECK(rank >= 0 && rank < static_cast<int>(ranks.size()), source, ": the schedule cannot run: ", why);
  const std::string rest = first.substr(static_cast<std::size_t>(stage_match.position(0) + stage_match.length(0)));
  if (std::regex_search(rest, action_match, action_pattern) && action_match[1].length() < 9)
    if (const Compute* cell = cell_behind(schedule, ranks[rank], rank, std::stoi(action_match[1].str()) - 1))
      cell_error(source, rank, cell->step, cell->text, why);
  LOOM_THROW(source, ": rank ", rank, ": ", why);
}

}  // namespace

Schedule parse_csv_schedule(std::string_view text, const std::string& source, const ScheduleFileOptions& options) {
  const std::vector<std::vector<Compute>> ranks = compute_cells(csv_rows(text, source), source, options);
  const ProgressMap progress = check_order(ranks, source);
  const Layout placed = layout(ranks, source);
  int largest = -1;
  for (const auto& row : ranks)
    for (const Compute& a : row) largest = std::max(largest, a.microbatch);
  const int microbatches = options.microbatches > 0 ? options.microbatches : largest + 1;
  LOOM_CHECK(largest + 1 == microbatches, source, ": the file's micro-batches are 0..", largest, " (M = ", largest + 1,
             "), but ", microbatches, " were asked for");
  check_size(placed.stages, microbatches, placed.chunks, source);
  check_complete(placed, microbatches, progress, source,
                 options.microbatches > 0 ? " as asked for" : " from the largest micro-batch index");

  Schedule schedule{"custom", placed.stages, microbatches, placed.chunks, {}, placed.placement};
  for (const auto& row : ranks) {
    std::vector<Action> program;
    for (const Compute& a : row)
      program.push_back(Action{a.op, a.microbatch, placed.chunk_of[a.stage], -1, a.overlap});
    schedule.programs.push_back(std::move(program));
  }
  schedule = finish_synchronous(std::move(schedule));
  const ValidationReport report = validate(schedule);
  if (!report.ok()) throw_located(schedule, ranks, report, source);
  return schedule;
}

std::string to_csv(const Schedule& schedule) {
  LOOM_CHECK(!schedule.asynchronous(), "schedule '", schedule.name,
             "' is asynchronous (weight versions, a STEP per minibatch): PyTorch's CSV holds synchronous schedules "
             "only; loom's text format holds it");
  std::string text;
  for (int s = 0; s < static_cast<int>(schedule.programs.size()); ++s) {
    bool first = true;
    for (const Action& a : schedule.programs[s]) {
      if (!is_compute(a.op)) continue;
      const char* type = a.op == Op::Forward ? "F" : a.op == Op::Backward ? "B" : a.op == Op::BackwardInput ? "I" : "W";
      // An overlapped pair is one cell, "(0F7;7B3)OVERLAP_F_B"; its forward half opened it.
      if (a.overlap == Overlap::backward_half) text += ';';
      else if (!first) text += ',';
      if (a.overlap == Overlap::forward_half) text += '(';
      text += std::to_string(schedule.virtual_stage(s, a.chunk));
      text += type;
      text += std::to_string(a.microbatch);
      if (a.overlap == Overlap::backward_half) text += ")OVERLAP_F_B";
      first = false;
    }
    text += "\r\n";
  }
  return text;
}

}  // namespace loom::schedule
