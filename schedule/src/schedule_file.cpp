// Schedule files (schedule_file.h): the format told by content, read, validated, written.
#include <loom/schedule/schedule_file.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

namespace loom::schedule {

namespace {

// A schedule file larger than this is not one (2^19 cells of a few actions each fit many times).
constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;

// `line` starts with `word` followed by a blank, a ':' or its end.
bool starts_with_word(std::string_view line, std::string_view word) {
  if (line.substr(0, word.size()) != word) return false;
  return line.size() == word.size() || std::isspace(static_cast<unsigned char>(line[word.size()])) ||
         line[word.size()] == ':';
}

}  // namespace

ScheduleFileFormat parse_schedule_file_format(std::string_view name, std::string_view source) {
  if (name == "loom") return ScheduleFileFormat::Loom;
  if (name == "csv") return ScheduleFileFormat::Csv;
  LOOM_THROW(source, source.empty() ? "" : ": ", "unknown schedule file format '", excerpt(name),
             "' (expected loom or csv)");
}

std::string_view schedule_file_format_name(ScheduleFileFormat format) {
  return format == ScheduleFileFormat::Csv ? "csv" : "loom";
}

ScheduleFileFormat detect_schedule_file_format(std::string_view text, const std::string& source) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    if (starts_with_word(line, "schedule") || starts_with_word(line, "placement") || starts_with_word(line, "stage"))
      return ScheduleFileFormat::Loom;
    if (line.find(',') != std::string_view::npos || std::isdigit(static_cast<unsigned char>(line.front())) ||
        line.front() == '(' || line.front() == '"')
      return ScheduleFileFormat::Csv;
    LOOM_THROW(source, ": not a schedule file: '", excerpt(line, 40),
               "' is neither loom's text ('schedule NAME', 'stage N: F0 ...') nor PyTorch's CSV (cells such as 0F0,1F0)");
  }
  LOOM_THROW(source, ": the schedule file is empty");
}

Schedule parse_schedule_file(std::string_view text, const std::string& source, const ScheduleFileOptions& options) {
  if (detect_schedule_file_format(text, source) == ScheduleFileFormat::Csv)
    return parse_csv_schedule(text, source, options);  // validated, errors located in the file
  Schedule schedule = parse_schedule(text, source);
  LOOM_CHECK(options.microbatches <= 0 || schedule.microbatches == options.microbatches, source,
             ": the schedule's micro-batches are 0..", schedule.microbatches - 1, " (M = ", schedule.microbatches,
             "), but ", options.microbatches, " were asked for");
  check(schedule, source);
  return schedule;
}

Schedule read_schedule_file(const std::string& path, const ScheduleFileOptions& options) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(static_cast<bool>(in), path, ": cannot read the schedule file (", std::strerror(errno), ")");
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    LOOM_CHECK(text.size() <= kMaxFileBytes, path, ": more than ", kMaxFileBytes >> 20,
               " MiB, too large for a schedule file");
  }
  LOOM_CHECK(!in.bad(), path, ": cannot read the schedule file (", std::strerror(errno), ")");
  return parse_schedule_file(text, path, options);
}

std::string write_schedule_file(const Schedule& schedule, ScheduleFileFormat format) {
  return format == ScheduleFileFormat::Csv ? to_csv(schedule) : to_text(schedule, TextStyle::Full);
}

void write_schedule_file(const Schedule& schedule, ScheduleFileFormat format, const std::string& path) {
  const std::string text = write_schedule_file(schedule, format);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  LOOM_CHECK(static_cast<bool>(out), path, ": cannot write the schedule file (", std::strerror(errno), ")");
  out << text;
  out.close();
  LOOM_CHECK(static_cast<bool>(out), path, ": cannot write the schedule file (", std::strerror(errno), ")");
}

void check_file_is_kind(const Schedule& file, ScheduleKind kind, const std::string& path, const ScheduleOptions& base) {
  const std::string_view name = schedule_kind_name(kind);
  LOOM_CHECK(file.name == "custom" || file.name == name, "--schedule ", name, " does not match ", path,
             ", which holds schedule '", file.name, "' (leave --schedule out: the file sets it)");
  ScheduleOptions options = base;
  options.stages = file.stages;
  options.chunks = file.chunks;
  options.microbatches = file.microbatches;
  if (kind == ScheduleKind::pipedream_2bw) {
    options.minibatches = file.batches();
    options.microbatches = file.microbatches_per_batch();
  }
  const std::string sizes = "S=" + std::to_string(file.stages) + ", M=" + std::to_string(file.microbatches) +
                            ", v=" + std::to_string(file.chunks);
  Schedule generated;
  try {
    generated = make_schedule(kind, options);
  } catch (const loom::Error& e) {
    LOOM_THROW("--schedule ", name, " does not fit ", path, " (", sizes, "): ", e.what());
  }
  if (same_programs(generated, file)) return;
  std::string why = " (" + std::string(name) + " runs v=" + std::to_string(generated.chunks) + ")";
  if (generated.chunks == file.chunks) {
    int stage = 0;
    while (stage < file.stages && generated.programs[stage] == file.programs[stage]) ++stage;
    why = stage < file.stages ? " (stage " + std::to_string(stage) + " differs)" : " (the placement differs)";
  }
  LOOM_THROW("--schedule ", name, " does not match ", path, ": the file is not ", name, "'s schedule for ", sizes, why,
             "; leave --schedule out to use the file as it is");
}

Schedule load_schedule_file(const std::string& path, const ScheduleFileFlags& flags) {
  const Schedule file = read_schedule_file(path, {flags.microbatches});
  LOOM_CHECK(flags.stages == 0 || flags.stages == file.stages, "--stages ", flags.stages, " does not match ", path,
             ", which has ", file.stages, " stages (leave --stages out: the file sets it)");
  LOOM_CHECK(flags.chunks == 0 || flags.chunks == file.chunks, "--chunks ", flags.chunks, " does not match ", path,
             ", which has ", file.chunks, " chunks per stage (leave --chunks out: the file sets it)");
  if (flags.kind) {
    ScheduleOptions generator;
    generator.warmup = flags.warmup;
    check_file_is_kind(file, *flags.kind, path, generator);
  }
  return file;
}

}  // namespace loom::schedule
